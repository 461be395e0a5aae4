// Command-line options shared by the examples ("--name value" / "--flag").
#pragma once

#include <map>
#include <string>

namespace ex {

class Args {
public:
    // flags: names that take no value.
    Args(int argc, char **argv, const std::string &usage, const char *const *flags);
    std::string str(const std::string &name, const std::string &def) const;
    long num(const std::string &name, long def) const;
    bool has(const std::string &name) const { return v_.count(name) != 0; }

private:
    std::map<std::string, std::string> v_;
};

// anvil_set_num_threads + omp_set_num_threads (oneDNN's OpenMP runtime and
// the glue loops).  n <= 0 keeps the OpenMP default.  Returns the count used.
int set_threads(int n);

}  // namespace ex

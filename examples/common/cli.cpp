#include "common/cli.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "anvil/anvil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

namespace ex {

Args::Args(int argc, char **argv, const std::string &usage, const char *const *flags) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::printf("%s", usage.c_str());
            std::exit(0);
        }
        if (a.rfind("--", 0) != 0) {
            std::fprintf(stderr, "unexpected argument '%s'\n%s", a.c_str(), usage.c_str());
            std::exit(2);
        }
        a = a.substr(2);
        bool is_flag = false;
        for (const char *const *f = flags; *f; ++f) is_flag |= a == *f;
        if (is_flag) {
            v_[a] = "1";
        } else if (i + 1 < argc) {
            v_[a] = argv[++i];
        } else {
            std::fprintf(stderr, "--%s needs a value\n%s", a.c_str(), usage.c_str());
            std::exit(2);
        }
    }
}

std::string Args::str(const std::string &name, const std::string &def) const {
    auto it = v_.find(name);
    return it == v_.end() ? def : it->second;
}

long Args::num(const std::string &name, long def) const {
    auto it = v_.find(name);
    if (it == v_.end()) return def;
    char *end = nullptr;
    const long v = std::strtol(it->second.c_str(), &end, 10);
    if (!end || *end) {
        std::fprintf(stderr, "--%s: not a number: '%s'\n", name.c_str(), it->second.c_str());
        std::exit(2);
    }
    return v;
}

int set_threads(int n) {
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
    n = omp_get_max_threads();
#else
    if (n <= 0) n = 1;
#endif
    anvil_set_num_threads(n);
    return n;
}

}  // namespace ex

// anvil-bench replay LOG [ARGS...]: every ANVIL_VERBOSE=2 "exec" line of a
// log (a server's stderr, say) becomes the anvil-bench problem that runs
// the same call -- op, types, transposes, shape and, for the matmul and
// conv handles, the whole attribute chain -- and runs it with ARGS (e.g.
// --mode perf --threads 1).  Identical lines run once (the count is shown).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace anvil_bench {

// The key=value fields of an "anvil_verbose,exec,..." line (false for any
// other line).
bool parse_exec_line(const std::string &line, std::map<std::string, std::string> *fields);

// The anvil-bench arguments (after the program name) that replay one exec
// line; false with *why when the line cannot be replayed.
bool replay_args(const std::map<std::string, std::string> &f, std::vector<std::string> *args,
                 std::string *why);

// Entry point of `anvil-bench replay`; argv[0] is the program, argv[1]
// "replay".  Runs each problem in a child anvil-bench; the exit status is
// 0 when all pass, 1 when one fails, 2 for a usage error.
int run_replay(int argc, char **argv);

}  // namespace anvil_bench

// Base of every anvil JIT generator.  Code is emitted into Xbyak's buffer,
// which is never executable, then copied into a fresh mapping that is made
// read+execute only after the copy: no page is ever writable and executable
// at once (W^X).
#pragma once
#include <string>

#define XBYAK_NO_OP_NAMES
#include <xbyak/xbyak.h>

#include "anvil/anvil.h"
#include "cache/kernel_cache.h"

namespace anvil::jit {

class jit_generator : public Xbyak::CodeGenerator {
public:
    static constexpr size_t kMaxCodeBytes = 64 * 1024;
    // Xbyak writes into a per-thread heap buffer (plain RW memory, never
    // executable), which saves a map/unmap pair per kernel.
    jit_generator() : Xbyak::CodeGenerator(kMaxCodeBytes, scratch_buffer()) {}

    // Copies the emitted code into an executable mapping and wraps it as a
    // cache kernel named `name`; honours ANVIL_JIT_DUMP and ANVIL_JIT_PROFILE.
    anvil_status_t finalize(const std::string &name, cache::kernel_ptr *out);

protected:
    // Frame-pointer prologue (perf can unwind through JIT code) and the
    // matching epilogue; callee-saved registers the kernel uses go in
    // `saved` and are pushed/popped in order.
    void preamble(std::initializer_list<Xbyak::Reg64> saved);
    void preamble(const std::vector<Xbyak::Reg64> &saved);
    void postamble();

private:
    static uint8_t *scratch_buffer();
    std::vector<Xbyak::Reg64> saved_;
};

}  // namespace anvil::jit

// Private to libdfw_python.so: a cap on the interpreter's heap. Every block Python takes from the
// C library (its raw domain, which its object allocator also uses for blocks over 512 bytes) and
// every arena of its small-object allocator is counted; past the cap the allocation fails and
// Python raises MemoryError, so a runaway callable or template ends as an error, never as the
// host's memory. Installed once, after pre-initialisation and before initialisation.
#pragma once

#include <cstdint>

namespace dfw::python_embed {

// limit_bytes <= 0: counted, not capped.
void InstallMemoryCap(int64_t limit_bytes);

// Bytes held now (for messages).
int64_t MemoryInUse();

}  // namespace dfw::python_embed

// A memory budget for avro-c while it decodes a file. avro-c sizes its buffers from the file's own
// counts (a block's byte length, a string's length, an array's item count), so a damaged or hostile
// file could ask for terabytes; under a budget such an allocation fails and avro-c returns ENOMEM,
// which the reader reports as that file's error.
#pragma once

#include <cstddef>

namespace dfw::stages_io {

// Installs the budgeting allocator into avro-c (once per process; idempotent, thread-safe). Outside
// an AvroMemoryBudget scope it is plain realloc/free.
void InstallAvroAllocator();

// While alive, avro-c allocations made on this thread may hold at most `limit_bytes` more than when
// the scope began (frees of older memory count as negative). Scopes do not nest.
class AvroMemoryBudget {
 public:
  explicit AvroMemoryBudget(std::size_t limit_bytes);
  ~AvroMemoryBudget();
  AvroMemoryBudget(const AvroMemoryBudget&) = delete;
  AvroMemoryBudget& operator=(const AvroMemoryBudget&) = delete;
};

}  // namespace dfw::stages_io

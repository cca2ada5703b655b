// A memory budget for avro-c while it decodes a file. avro-c sizes its buffers from the file's own
// counts (a block's byte length, a string's length, an array's item count), so a damaged or hostile
// file could ask for terabytes; under a budget such an allocation fails and avro-c returns ENOMEM,
// which the reader reports as that file's error.
#pragma once

#include <cstddef>
#include <unordered_set>

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

// The avro-c allocations of one reader that are still live. avro-c 1.11 (Debian 12's libavro23)
// leaks from a reader: the writer's schema it parsed, with references the generic values it
// decoded took and never gave back, and everything when avro_file_reader() fails after parsing
// the header. After the reader is closed and its values released nothing of it is reachable, so
// FreeAll() frees what is left (LeakSanitizer and the fuzz target show the leaks otherwise).
class AvroAllocations {
 public:
  AvroAllocations() = default;
  ~AvroAllocations() { FreeAll(); }
  AvroAllocations(const AvroAllocations&) = delete;
  AvroAllocations& operator=(const AvroAllocations&) = delete;
  void FreeAll();

 private:
  friend class AvroAllocationScope;
  std::unordered_set<void*> live_;
};

// While alive, avro-c allocations and frees on this thread are recorded in `allocations`. Every
// avro-c call of a reader must run inside one (a pointer freed outside would be freed twice).
class AvroAllocationScope {
 public:
  explicit AvroAllocationScope(AvroAllocations& allocations);
  ~AvroAllocationScope();
  AvroAllocationScope(const AvroAllocationScope&) = delete;
  AvroAllocationScope& operator=(const AvroAllocationScope&) = delete;

 private:
  std::unordered_set<void*>* previous_;
};

}  // namespace dfw::stages_io

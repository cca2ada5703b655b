#include "memory_cap.h"

#include <Python.h>
#include <malloc.h>

#include <atomic>

namespace dfw::python_embed {
namespace {

std::atomic<int64_t> g_used{0};
int64_t g_limit = 0;
PyMemAllocatorEx g_raw{};
PyObjectArenaAllocator g_arena{};

// Blocks may be freed on any thread without the GIL (the raw domain is thread-safe), hence atomics.
bool Take(std::size_t n) {
  const int64_t add = static_cast<int64_t>(n);
  const int64_t now = g_used.fetch_add(add, std::memory_order_relaxed) + add;
  if (g_limit > 0 && now > g_limit) {
    g_used.fetch_sub(add, std::memory_order_relaxed);
    return false;
  }
  return true;
}
void Give(std::size_t n) { g_used.fetch_sub(static_cast<int64_t>(n), std::memory_order_relaxed); }

void* CappedMalloc(void*, std::size_t n) {
  void* p = g_raw.malloc(g_raw.ctx, n);
  if (p != nullptr && !Take(malloc_usable_size(p))) {
    g_raw.free(g_raw.ctx, p);
    return nullptr;
  }
  return p;
}

void* CappedCalloc(void*, std::size_t count, std::size_t size) {
  if (size != 0 && count > SIZE_MAX / size) return nullptr;
  if (g_limit > 0 && static_cast<int64_t>(count * size) > g_limit - g_used.load(std::memory_order_relaxed)) return nullptr;
  void* p = g_raw.calloc(g_raw.ctx, count, size);
  if (p != nullptr && !Take(malloc_usable_size(p))) {
    g_raw.free(g_raw.ctx, p);
    return nullptr;
  }
  return p;
}

void* CappedRealloc(void*, void* old, std::size_t n) {
  const std::size_t before = old != nullptr ? malloc_usable_size(old) : 0;
  // Refused before it happens: a failed realloc must leave the old block as it was.
  if (g_limit > 0 && n > before && static_cast<int64_t>(n - before) > g_limit - g_used.load(std::memory_order_relaxed)) {
    return nullptr;
  }
  void* p = g_raw.realloc(g_raw.ctx, old, n);
  if (p == nullptr) return nullptr;
  Give(before);
  g_used.fetch_add(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}

void CappedFree(void*, void* p) {
  if (p == nullptr) return;
  Give(malloc_usable_size(p));
  g_raw.free(g_raw.ctx, p);
}

void* ArenaAlloc(void*, std::size_t n) {
  if (!Take(n)) return nullptr;
  void* p = g_arena.alloc(g_arena.ctx, n);
  if (p == nullptr) Give(n);
  return p;
}

void ArenaFree(void*, void* p, std::size_t n) {
  if (p == nullptr) return;
  g_arena.free(g_arena.ctx, p, n);
  Give(n);
}

}  // namespace

void InstallMemoryCap(int64_t limit_bytes) {
  g_limit = limit_bytes;
  PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &g_raw);
  PyMemAllocatorEx capped{nullptr, CappedMalloc, CappedCalloc, CappedRealloc, CappedFree};
  PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &capped);
  PyObject_GetArenaAllocator(&g_arena);
  PyObjectArenaAllocator arena{nullptr, ArenaAlloc, ArenaFree};
  PyObject_SetArenaAllocator(&arena);
}

int64_t MemoryInUse() { return g_used.load(std::memory_order_relaxed); }

}  // namespace dfw::python_embed

// How big a job's bundles are: sized to the job, not fixed. Dataflow splits a bounded source into
// bundles sized for the workers and threads that read it; one SDK process per vCPU on one worker
// VM means an input smaller than the old fixed 64 MiB target was one bundle, and one process did
// all the work. The target here aims at kBundlesPerProcess bundles for every SDK process (more
// than one each, so a slow process or an uneven file does not hold the job), within a floor (a
// tiny input is not cut into one-record bundles: each bundle costs a lease, a commit and a shard)
// and a ceiling (a bundle is read into memory whole).
//
// A pipeline whose rows cost milliseconds each (a text model: RunInference's batcher takes a whole
// small bundle in before its first batch, so a rebalancing split cannot take its end) aims at
// kCostlyRowBundlesPerProcess with a 16 KiB floor instead: the last bundle, the time one process
// waits for another at the end, is then a quarter as long (measured: all-MiniLM-L6-v2 on 2,048
// sentences, 2 SDK processes, one process idle 1.9-2.2 s of 8.4-8.6 s with 64 KiB bundles).
//
// Harness threads do not enter the count: they share one bundle's flow graph inside a process.
#pragma once

#include <cstdint>
#include <string>

namespace dfw {

inline constexpr int64_t kMinBundleBytes = int64_t{64} << 10;  // 64 KiB
inline constexpr int64_t kMaxBundleBytes = int64_t{64} << 20;  // 64 MiB
inline constexpr int64_t kMinBundleElements = 256;             // in-memory sources (Create)
inline constexpr int kBundlesPerProcess = 4;
inline constexpr int64_t kMinCostlyRowBundleBytes = int64_t{16} << 10;  // 16 KiB
inline constexpr int kCostlyRowBundlesPerProcess = 8;

// How the rows of a job cost: kCheap (microseconds: parse, map, an MLP) or kCostly (milliseconds:
// a text model).
enum class RowCost { kCheap, kCostly };

struct BundleTarget {
  int64_t bytes = kMaxBundleBytes;  // a file source's bundles end at the first record boundary past this
  int64_t elements = 0;             // an in-memory source's elements per bundle; 0 = none to cut
  int desired_bundles = 1;          // what the target aims at (processes x kBundlesPerProcess)
  std::string ToString() const;     // "target 256.0 KiB, 1024 elements per bundle (aiming at 8 bundles)"; elements only when there are some
};

// The target for `total_bytes` of file input and `total_elements` of in-memory input read by
// `processes` SDK processes (< 1 counts as 1). Pure arithmetic; see the file comment.
BundleTarget SizeBundles(int64_t total_bytes, int64_t total_elements, int processes, RowCost cost = RowCost::kCheap);
// The smallest target for `cost` (kMinBundleBytes, or kMinCostlyRowBundleBytes).
int64_t MinBundleBytes(RowCost cost);

}  // namespace dfw

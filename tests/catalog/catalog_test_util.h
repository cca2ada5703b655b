// Shared by the catalog, plan and validate tests: the project's configs/ catalog.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "dfw/catalog/catalog.h"

namespace dfw::testing {

inline const Catalog& SourceCatalog() {
  static const Catalog* catalog = [] {
    auto c = Catalog::LoadDir(std::string(DFW_SOURCE_DIR) + "/configs");
    if (!c.ok()) {
      ADD_FAILURE() << c.status().ToString();
      std::abort();
    }
    return new Catalog(std::move(c).value());
  }();
  return *catalog;
}

}  // namespace dfw::testing

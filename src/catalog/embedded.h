// Internal: the configs/*.yaml files embedded at build time (generated embedded_catalog.cc).
#pragma once

#include <vector>

#include "dfw/catalog/catalog.h"

namespace dfw::catalog_internal {

const std::vector<CatalogFile>& EmbeddedCatalogFiles();

}  // namespace dfw::catalog_internal

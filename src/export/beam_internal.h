// Between the two halves of the Beam export: the YAML (beam_pipeline.cc) and the launch files.
#pragma once

#include "dfw/export/beam_export.h"

namespace dfw::export_internal {

// Fills exported.readme and exported.launch_sh from the validated options and what the YAML needs
// (the companion package, the ML feature, the notes and manual steps already collected).
void AddLaunchFiles(const PipelineOptions& options, const BeamExportOptions& export_options, BeamExport& exported);

}  // namespace dfw::export_internal

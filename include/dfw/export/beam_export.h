// `dfworker export --to beam`: a dfworker pipeline file → what Beam (DirectRunner, Dataflow) needs
// to run the same job: a Beam YAML file, the launch commands, and the list of what changed.
//
// Transforms Beam has under the same spelling (Create, ReadFrom*/WriteTo*, MapToFields, Filter,
// Explode, Flatten, LogForTesting, MLTransform) are carried over with the keys Beam's own
// implementations take; dfworker's model handlers become transforms of the companion Python
// package `dfworker_beam` (python/ in this repository), wired in through a `providers:` entry of
// type python without packages (Beam imports the classes in its own process: nothing is pip
// installed at run time, and Dataflow workers get the package through --extra_package):
//   MlpModelHandlerSafetensors → DfworkerMlpInference (numpy, the same config.json/safetensors)
//   SentenceEmbeddingHandler   → MLTransform + SentenceTransformerEmbeddings when the model
//                                directory's sentence-transformers defaults give dfworker's pooling,
//                                normalisation and max length and no error output is needed;
//                                else DfworkerSentenceEmbedding (sentence-transformers built with
//                                exactly those settings).
// Every construct whose meaning changes (an error output Beam's transform does not have, a file
// name suffix, GPU placement) is named in BeamExport::notes. A construct with no Beam equivalent
// is an error naming it, or, with allow_manual_steps, a marked manual step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dfw/common/status.h"
#include "dfw/options/options.h"

namespace dfw {

struct BeamExportOptions {
  std::string pipeline_path;        // the dfworker pipeline file as given (quoted in the README)
  std::string out_dir;              // where the files will be written (paths in the commands)
  std::string companion_dir;        // the companion package's source (python/), "" when not found
  bool allow_manual_steps = false;  // write what has no Beam equivalent as a marked manual step
};

struct BeamExport {
  std::string pipeline_yaml;               // pipeline.yaml: Beam YAML
  std::string readme;                      // README.md: how to run it locally and on Dataflow, the notes
  std::string launch_sh;                   // launch.sh: the Dataflow launch (python -m ... and gcloud)
  std::vector<std::string> notes;          // what was not carried over or changes meaning, one sentence each
  std::vector<std::string> manual_steps;   // transforms left for the user to replace (allow_manual_steps)
  bool uses_companion = false;             // the YAML needs the dfworker_beam package
  bool uses_ml = false;                    // the YAML needs yaml_experimental_features: [ML]
  bool uses_combine = false;               // ... and [Combine]
};

// The Beam form of `yaml_text`, a pipeline dfworker's loader accepted (the caller loads and
// validates it first; only what is rewritten is re-checked here), with `options` the validated
// pipeline options for the launch commands. Errors: kUnimplemented naming the transform and why
// when something has no Beam equivalent and !allow_manual_steps; kInvalidArgument for YAML it
// cannot read. Never throws.
Result<BeamExport> ExportPipelineToBeam(std::string_view yaml_text, const PipelineOptions& options,
                                        const BeamExportOptions& export_options);

// Writes pipeline.yaml, README.md and launch.sh (mode 0755) into `out_dir` (created if missing;
// existing files of those names are replaced, nothing else there is touched).
Status WriteBeamExport(const BeamExport& exported, const std::string& out_dir);

}  // namespace dfw

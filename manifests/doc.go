// Package manifests loads a package directory at one revision and renders it into ordered phases
// of objects, ready for the sync engine.
//
// A package directory holds a manifest.yaml (convoy's convoy.dev/v1alpha1 PackageManifest or
// Package Operator's manifests.package-operator.run/v1alpha1 one), any number of multi-document
// YAML files, Go templates (*.gotmpl) and, optionally, a kustomization.yaml. Load reads it from an
// fs.FS (a Git commit served by the sources store, or a local directory), renders templates with
// the template data, builds the kustomization in memory, validates and defaults the config against
// the manifest's schema, assigns every object to its phase and compiles the availability probes.
//
// Load is pure: it never reaches a cluster, the network or the host's environment, so the same
// inputs always give the same output. Cache memoizes Load by (source, commit, directory, template
// data), so that a thousand Packages on one revision render once per distinct template data; for
// a package without templates the template data that counts is only the config, so they render
// once per distinct config.
//
// Whatever a commit holds, loading it is bounded. Templates execute in a child process of the
// current binary under a RenderBudget of CPU time, memory and wall-clock time that the kernel
// enforces (any binary linking this package serves as that child, from its init); decoding stops
// past MaxObjects documents or an expanded size, and refuses YAML alias bombs; symlinks are
// resolved by Load itself and may not leave the package directory, whatever the fs.FS; CEL
// rules have a cost limit, estimated at load and enforced per evaluation.
//
// A package may be a Helm chart's (the manifest's spec.chart): a chart vendored in the package or
// pulled through TemplateData.Charts at a pinned digest, rendered with the Helm SDK's engine in
// the same render process and under the same budget as templates, with no cluster access
// (lookup returns nothing), its values merged from the chart, the manifest, the config and
// per-cluster values files, its objects placed in phases by annotation or by kind (helm*.go).
// .Capabilities are those of the cluster each part lands in (Environment.APIVersions, and
// TemplateData.HostedEnvironment for a chart split across both clusters), and a Cache runs a
// chart's render process once per distinct request (what reaches the chart), shared by the
// Packages of every cluster whose charts get equal inputs.
//
// Package Operator packages are read as Package Operator reads them: its template context
// (.package.metadata, .config, .images resolved through manifest.lock.yaml, .environment), its
// spec.scopes (a Cluster-scoped render, TemplateData.Scope, is a ClusterPackage's: every phase
// in the hosted cluster, no package namespace), spec.constraints (Constraints.Check, against the
// environment the caller knows), the condition-map annotation (Phase.ConditionMaps),
// multi-component packages (TemplateData.Component selects components/NAME/),
// conditional objects (spec.filter and the package-operator.run/condition annotation,
// evaluated with cost-limited CEL) and repeated keys (a warning). Its test.template cases are
// rendered by LoadTestCase and compared with their .test-fixtures by CompareFixtures; LoadStatic
// checks a package without cases as kubectl package validate does.
//
// Errors are collected rather than returned at the first one: a failed Load returns Errors, one
// Error per problem, each naming the file, the line where it is known and the rule broken, which
// is what `convoy validate` prints for pull-request CI.
package manifests

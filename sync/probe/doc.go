// Package probe judges whether applied objects are available, for the sync engine.
//
// An object selected by one or more compiled availability probes (from a PackageManifest or an
// ObjectDeployment template, compiled by manifests/probe) is available when every check of
// every selecting probe passes on its live state: condition, fieldsEqual and cel checks, each
// refusing a status that is stale (status.observedGeneration behind metadata.generation). An
// object no probe selects is judged by kstatus: it is available when kstatus computes Current.
//
// Evaluation is pure: it reads the live object it is given and never reaches a cluster.
package probe

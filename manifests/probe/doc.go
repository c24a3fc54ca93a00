// Package probe defines when an applied object is available: it compiles availability probes
// (convoyv1alpha1.ObjectSetProbe) when a package is loaded, and evaluates them against live
// objects for the sync engine.
//
// Compiling turns selectors into label selectors, splits field paths and compiles CEL rules
// once, so that a rule that does not compile is a load error rather than a failure at apply
// time.
//
// Evaluating: an object selected by one or more compiled rules is available when every check
// of every selecting rule passes on its live state: condition, fieldsEqual and cel checks, each
// refusing a status that is stale (status.observedGeneration behind metadata.generation). An
// object no rule selects is judged by kstatus: it is available when kstatus computes Current.
// Evaluation is pure: it reads the live object it is given and never reaches a cluster.
package probe

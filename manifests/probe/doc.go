// Package probe compiles availability probes (v1alpha1.ObjectSetProbe) into a form the sync
// engine evaluates without re-parsing: selectors become label selectors, field paths are split,
// and CEL rules are compiled once, when a package is loaded, so that a rule that does not
// compile is a load error rather than a failure at apply time.
//
// Evaluating a probe against a live object (conditions, staleness, kstatus for unselected
// objects) is the sync engine's job; this package only offers the compiled pieces and the small
// primitives that define their meaning (Path.Lookup, CEL.Eval).
package probe

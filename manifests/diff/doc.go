// Package diff compares two renders of a package object by object, and a render with what a
// cluster holds, for `convoy diff`.
//
// Objects are matched by API group, kind, namespace and name, so an object whose apiVersion
// changes is a change, not a removal and an addition. Before they are compared both sides are
// cleaned of the fields that say nothing about the change: status, managed fields, the
// server-set metadata (uid, resourceVersion, generation, creationTimestamp) and the
// last-applied annotation. A changed object carries a unified diff of its cleaned YAML.
//
// A Report groups the changes per phase in the order of the new render (removed objects in the
// phase of the old one) and prints as text for a terminal, as Markdown for a pull request
// comment (one collapsed <details> block per phase, with counts) or as JSON.
package diff

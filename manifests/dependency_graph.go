package manifests

import (
	"slices"
	"strings"
)

// DependencyGraph is the graph that the spec.dependencies of a set of packages form, by package
// name, as `convoy validate` checks it offline: on a management cluster each package is rolled
// out by a HostedClusterPackage, and each of its dependencies waits for the one rolling out the
// package it names. The spec.dependsOn of HostedClusterPackages form the same kind of graph
// (GraphOf), by HostedClusterPackage name.
type DependencyGraph struct {
	// Order lists the packages level by level: level 0 depends on none of the set, each later
	// level on the levels before it. Empty when Cycle is set.
	Order [][]string
	// Cycle names the packages of a cycle, from one back to it; the controller refuses it.
	Cycle []string
	// Outside lists, as "<package> needs <dependency>", the dependencies on packages that are
	// not in the set: a HostedClusterPackage must roll them out, or the dependant waits.
	Outside []string
}

// NewDependencyGraph builds the graph of heads, packages sorted by name.
func NewDependencyGraph(heads []ManifestHead) DependencyGraph {
	needs := map[string][]string{}
	for _, h := range heads {
		needs[h.Name] = nil
		for _, d := range h.Dependencies {
			needs[h.Name] = append(needs[h.Name], d.Package)
		}
	}
	return GraphOf(needs)
}

// GraphOf builds the graph in which each key of needs needs the names it maps to, sorted by
// name: what `convoy validate` checks of packages' spec.dependencies and of
// HostedClusterPackages' spec.dependsOn alike.
func GraphOf(needs map[string][]string) DependencyGraph {
	var g DependencyGraph
	names := make([]string, 0, len(needs))
	for name := range needs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, dep := range needs[name] {
			if _, ok := needs[dep]; !ok {
				g.Outside = append(g.Outside, name+" needs "+dep)
			}
		}
	}
	depth := map[string]int{}
	for _, name := range names {
		if cycle := g.level(name, needs, depth, nil, map[string]bool{}); cycle != nil {
			g.Cycle = cycle
			return g
		}
	}
	for _, name := range names {
		for len(g.Order) <= depth[name] {
			g.Order = append(g.Order, nil)
		}
		g.Order[depth[name]] = append(g.Order[depth[name]], name)
	}
	return g
}

// level records in depth the level of name, one above its deepest dependency in the set; it
// returns a cycle through path when it finds one.
//
// Note: onPath holds the names of path, so that a long chain (validate reads one from a pull
// request's files) costs each name one lookup, not a scan of the path.
func (g *DependencyGraph) level(name string, needs map[string][]string, depth map[string]int, path []string, onPath map[string]bool) []string {
	if onPath[name] {
		return append(slices.Clone(path[slices.Index(path, name):]), name)
	}
	if _, ok := depth[name]; ok {
		return nil
	}
	level := 0
	onPath[name] = true
	for _, dep := range needs[name] {
		if _, ok := needs[dep]; !ok {
			continue
		}
		if cycle := g.level(dep, needs, depth, append(path, name), onPath); cycle != nil {
			return cycle
		}
		level = max(level, depth[dep]+1)
	}
	delete(onPath, name)
	depth[name] = level
	return nil
}

// String prints the order as "a; b, c; d".
func (g DependencyGraph) String() string {
	levels := make([]string, len(g.Order))
	for i, l := range g.Order {
		levels[i] = strings.Join(l, ", ")
	}
	return strings.Join(levels, "; ")
}

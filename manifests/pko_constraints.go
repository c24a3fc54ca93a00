package manifests

import (
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// Package Operator's platform names.
const (
	platformKubernetes = "Kubernetes"
	platformOpenShift  = "OpenShift"
)

// Constraints are a Package Operator package's spec.constraints: where it may be installed.
type Constraints []Constraint

// Constraint is one entry of spec.constraints.
type Constraint struct {
	// Platform lists platforms the package needs: OpenShift is met only on OpenShift;
	// Kubernetes always.
	Platform []string `json:"platform,omitempty"`
	// PlatformVersion bounds the version of a platform; it holds on other platforms.
	PlatformVersion *PlatformVersionConstraint `json:"platformVersion,omitempty"`
	// UniqueInScope is Package Operator's one-instance-per-scope constraint; not evaluated.
	UniqueInScope *struct{} `json:"uniqueInScope,omitempty"`
}

// PlatformVersionConstraint is a version range of a platform.
type PlatformVersionConstraint struct {
	// Name is Kubernetes or OpenShift.
	Name string `json:"name"`
	// Range is a semantic version range (">=4.14", "1.30.x").
	Range string `json:"range"`
}

// Check returns nil when env meets every constraint, else an error whose message lists, in
// Package Operator's words, each constraint not met ("constraints not met: OpenShift 4.12.0
// does not meet constraint >=4.14"). A version the cluster reports that is no semantic
// version fails the constraint that reads it.
func (cs Constraints) Check(env *Environment) error {
	if unmet := cs.unmet(env); len(unmet) > 0 {
		return errors.New("constraints not met: " + strings.Join(unmet, ", "))
	}
	return nil
}

// unmet returns a message for each constraint env does not meet.
func (cs Constraints) unmet(env *Environment) []string {
	if env == nil {
		env = &Environment{}
	}
	var unmet []string
	for _, c := range cs {
		for _, p := range c.Platform {
			if p == platformOpenShift && env.OpenShift == nil {
				unmet = append(unmet, "OpenShift platform")
				break
			}
		}
		if msg := c.PlatformVersion.check(env); msg != "" {
			unmet = append(unmet, msg)
		}
	}
	return unmet
}

// check returns why env does not meet the version constraint; "" when it does, when c is
// nil, and on another platform.
func (c *PlatformVersionConstraint) check(env *Environment) string {
	if c == nil {
		return ""
	}
	var version string
	switch {
	case c.Name == platformKubernetes:
		version = env.Kubernetes.Version
	case c.Name == platformOpenShift && env.OpenShift != nil:
		version = env.OpenShift.Version
	default:
		return ""
	}
	rng, err := semver.NewConstraint(c.Range)
	if err != nil {
		return fmt.Sprintf("%s version range %q is invalid: %v", c.Name, c.Range, err)
	}
	v, err := semver.NewVersion(version)
	if err != nil {
		return fmt.Sprintf("%s version %q is no semantic version, so it cannot meet constraint %s", c.Name, version, c.Range)
	}
	if !rng.Check(v) {
		return fmt.Sprintf("%s %s does not meet constraint %s", c.Name, v, c.Range)
	}
	return ""
}

// checkConstraints records malformed spec.constraints, as Package Operator's manifest
// validation does, and warns that uniqueInScope is not evaluated.
func (m *manifest) checkConstraints(errs *errorList) {
	for i, c := range m.constraints {
		at := m.lines.line(fmt.Sprintf("spec.constraints[%d]", i))
		for _, p := range c.Platform {
			if p != platformKubernetes && p != platformOpenShift {
				errs.add(m.file, at, RuleInvalidManifest, "spec.constraints[%d].platform: unknown platform %q; want Kubernetes or OpenShift", i, p)
			}
		}
		if pv := c.PlatformVersion; pv != nil {
			if pv.Name != platformKubernetes && pv.Name != platformOpenShift {
				errs.add(m.file, at, RuleInvalidManifest, "spec.constraints[%d].platformVersion.name: unknown platform %q; want Kubernetes or OpenShift", i, pv.Name)
			}
			if _, err := semver.NewConstraint(pv.Range); err != nil {
				errs.add(m.file, at, RuleInvalidManifest, "spec.constraints[%d].platformVersion.range %q: %v", i, pv.Range, err)
			}
		}
		if c.UniqueInScope != nil {
			errs.warn(m.file, at, RuleUnsupported,
				"spec.constraints[%d].uniqueInScope (one instance per namespace or cluster) is not evaluated by convoy: ignored", i)
		}
	}
}

package promotion

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// DefaultSectorMapPath is where a package repository declares its sectors, unless
// spec.promotion.sectorMapPath says otherwise.
const DefaultSectorMapPath = "sectors.yaml"

// MaxSectorMapBytes bounds the sector map file.
const MaxSectorMapBytes = 256 << 10

// SectorMapKind is the kind of a sector map file.
const SectorMapKind = "SectorMap"

// SectorMap declares which management clusters make up each sector. Example:
//
//	apiVersion: convoy.dev/v1alpha1
//	kind: SectorMap
//	sectors:
//	- name: canary
//	  managementClusters: [mc-canary-1, mc-canary-2]
//	- name: eu
//	  managementClusters: [mc-eu-1, mc-eu-2]
type SectorMap struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Sectors    []Sector `json:"sectors"`
}

// Sector is a named group of management clusters.
type Sector struct {
	// Name of the sector, a DNS label.
	Name string `json:"name"`
	// ManagementClusters are the names of its management clusters, DNS labels.
	ManagementClusters []string `json:"managementClusters"`
}

// ParseSectorMap reads a sector map file; path names it in errors. A sector map lists each
// sector once, each with at least one management cluster, and each management cluster in one
// sector only.
func ParseSectorMap(path string, data []byte) (SectorMap, error) {
	if len(data) > MaxSectorMapBytes {
		return SectorMap{}, fmt.Errorf("%s: %d bytes, more than %d", path, len(data), MaxSectorMapBytes)
	}
	var m SectorMap
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return SectorMap{}, fmt.Errorf("%s: %w", path, err)
	}
	if m.APIVersion != "convoy.dev/v1alpha1" || m.Kind != SectorMapKind {
		return SectorMap{}, fmt.Errorf("%s: apiVersion/kind is %s/%s, not convoy.dev/v1alpha1/%s", path, m.APIVersion, m.Kind, SectorMapKind)
	}
	if err := m.validate(); err != nil {
		return SectorMap{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// validate applies ParseSectorMap's rules.
func (m SectorMap) validate() error {
	sectorOf := map[string]string{}
	seen := map[string]bool{}
	for i, s := range m.Sectors {
		if err := ValidName(fmt.Sprintf("sectors[%d].name", i), s.Name); err != nil {
			return err
		}
		if seen[s.Name] {
			return fmt.Errorf("sectors[%d]: sector %s is listed twice", i, s.Name)
		}
		seen[s.Name] = true
		if len(s.ManagementClusters) == 0 {
			return fmt.Errorf("sectors[%d]: sector %s has no management cluster", i, s.Name)
		}
		for j, mc := range s.ManagementClusters {
			if err := ValidName(fmt.Sprintf("sectors[%d].managementClusters[%d]", i, j), mc); err != nil {
				return err
			}
			if other, ok := sectorOf[mc]; ok {
				return fmt.Errorf("sectors[%d]: management cluster %s is already in sector %s", i, mc, other)
			}
			sectorOf[mc] = s.Name
		}
	}
	return nil
}

// Members returns the management clusters of sector; false when the map has no such sector.
func (m SectorMap) Members(sector string) ([]string, bool) {
	for _, s := range m.Sectors {
		if s.Name == sector {
			return s.ManagementClusters, true
		}
	}
	return nil, false
}

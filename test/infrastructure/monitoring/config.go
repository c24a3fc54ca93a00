package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/yaml"
)

// The layout of the temporary folder: configuration, target and rule files, storage and logs.
const (
	prometheusConfigFile   = "prometheus.yml"
	alertmanagerConfigFile = "alertmanager.yml"
	targetsDir             = "targets"
	targetsFile            = "addons.json"
	rulesDir               = "rules"
	// scrapeJob is the job label of every target set through SetTargets.
	scrapeJob = "addons"
)

// prometheusConfig is Prometheus's configuration: one job whose targets come from the file
// SetTargets writes, the rule files SetRules writes, every alert sent to the Alertmanager.
func prometheusConfig(dir string, interval time.Duration, alertmanagerAddr string) map[string]any {
	every := interval.String()
	return map[string]any{
		"global": map[string]any{
			"scrape_interval":     every,
			"scrape_timeout":      every,
			"evaluation_interval": every,
		},
		"rule_files": []string{filepath.Join(dir, rulesDir, "*.yml")},
		"alerting": map[string]any{
			"alertmanagers": []any{map[string]any{
				"api_version":    "v2",
				"static_configs": []any{map[string]any{"targets": []string{alertmanagerAddr}}},
			}},
		},
		"scrape_configs": []any{map[string]any{
			"job_name": scrapeJob,
			"file_sd_configs": []any{map[string]any{
				"files": []string{filepath.Join(dir, targetsDir, "*.json")},
				// The file is watched; the refresh covers a machine out of inotify watches.
				"refresh_interval": every,
			}},
		}},
	}
}

// alertmanagerConfig routes every alert to a receiver that sends nothing: the tests read the
// alerts Alertmanager holds through its API.
func alertmanagerConfig() map[string]any {
	return map[string]any{
		"route":     map[string]any{"receiver": "none"},
		"receivers": []any{map[string]any{"name": "none"}},
	}
}

// writeYAML writes v as YAML to path.
func writeYAML(path string, v any) error {
	raw, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

// writeTargets replaces the file_sd file with one target group of targets, by a rename so that
// Prometheus never reads half a file.
func writeTargets(dir string, targets []string) error {
	if targets == nil {
		targets = []string{}
	}
	raw, err := json.Marshal([]map[string]any{{"targets": targets}})
	if err != nil {
		return err
	}
	return writeAtomically(filepath.Join(dir, targetsDir, targetsFile), raw)
}

// writeRules makes the rule folder hold exactly the given files (name without extension →
// content), each written by a rename.
func writeRules(dir string, files map[string]string) error {
	folder := filepath.Join(dir, rulesDir)
	old, err := filepath.Glob(filepath.Join(folder, "*.yml"))
	if err != nil {
		return err
	}
	for _, path := range old {
		if _, keep := files[trimExt(filepath.Base(path))]; !keep {
			if err := os.Remove(path); err != nil {
				return err
			}
		}
	}
	for name, content := range files {
		if name == "" || filepath.Base(name) != name {
			return fmt.Errorf("rule file name %q: want a plain file name", name)
		}
		if err := writeAtomically(filepath.Join(folder, name+".yml"), []byte(content)); err != nil {
			return err
		}
	}
	return nil
}

func trimExt(name string) string { return name[:len(name)-len(filepath.Ext(name))] }

// writeAtomically writes raw next to path, then renames it over path. The temporary name does
// not end in .json or .yml, so Prometheus's globs never match it.
func writeAtomically(path string, raw []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

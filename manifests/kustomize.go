package manifests

import (
	"cmp"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizeRoot is where the package sits in kustomize's in-memory filesystem; it is not "/"
// so that a reference to a parent directory finds nothing rather than the package itself.
const kustomizeRoot = "/package"

// originAnnotation is kustomize's annotation recording the file an object came from.
const originAnnotation = "config.kubernetes.io/origin"

// kustomizeMu serializes builds: kustomize keeps its OpenAPI schema in a global.
var kustomizeMu sync.Mutex

// buildKustomization builds the root kustomization of a package on an in-memory filesystem
// holding only the package's files (templates already rendered), with plugins, exec and remote
// bases disabled, and returns the built objects located at the files they came from.
func buildKustomization(files map[string][]byte, root string, errs *errorList) []*object {
	before := len(errs.errs)
	for p, data := range files {
		if isKustomization(p) {
			checkKustomizationRefs(p, data, files, errs)
		}
	}
	if len(errs.errs) > before {
		return nil
	}
	fsys, err := kustomizeFS(files, root)
	if err != nil {
		errs.add(root, 0, RuleKustomize, "%v", err)
		return nil
	}
	kustomizeMu.Lock()
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, kustomizeRoot)
	kustomizeMu.Unlock()
	if err != nil {
		errs.add(root, 0, RuleKustomize, "%s", strings.ReplaceAll(err.Error(), kustomizeRoot+"/", ""))
		return nil
	}
	objs := make([]*object, 0, resMap.Size())
	for _, r := range resMap.Resources() {
		if o := builtObject(r, root, errs); o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

// builtObject converts a built resource into an object located at the file it came from, as
// kustomize's origin annotation (removed here) records it.
func builtObject(r *resource.Resource, root string, errs *errorList) *object {
	file := root
	if origin, err := r.GetOrigin(); err == nil && origin != nil {
		file = cmp.Or(origin.Path, origin.ConfiguredIn, root)
	}
	j, err := r.MarshalJSON()
	var m map[string]any
	if err == nil {
		err = utiljson.Unmarshal(j, &m)
	}
	if err != nil {
		errs.add(file, 0, RuleKustomize, "%s: %v", r.CurId(), err)
		return nil
	}
	u := &unstructured.Unstructured{Object: m}
	removeAnnotations(u, originAnnotation)
	return &object{u: u, file: file}
}

// kustomizeFS writes the package into an in-memory filesystem, asking the root kustomization to
// record where each object came from.
func kustomizeFS(files map[string][]byte, root string) (filesys.FileSystem, error) {
	fsys := filesys.MakeFsInMemory()
	for p, data := range files {
		if p == root {
			data = withOriginAnnotations(data)
		}
		full := path.Join(kustomizeRoot, p)
		if err := fsys.MkdirAll(path.Dir(full)); err != nil {
			return nil, err
		}
		if err := fsys.WriteFile(full, data); err != nil {
			return nil, err
		}
	}
	return fsys, nil
}

// withOriginAnnotations adds buildMetadata: [originAnnotations] to a kustomization; it returns
// the file unchanged when it does not parse (kustomize then reports the problem).
func withOriginAnnotations(data []byte) []byte {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil || k == nil {
		return data
	}
	meta, _ := k["buildMetadata"].([]any)
	for _, v := range meta {
		if v == types.OriginAnnotations {
			return data
		}
	}
	k["buildMetadata"] = append(meta, types.OriginAnnotations)
	out, err := yaml.Marshal(k)
	if err != nil {
		return data
	}
	return out
}

// kustomizationPathFields are the fields of a kustomization whose strings name files or
// directories (a list of strings, or a list of objects with a path).
var kustomizationPathFields = []string{
	"resources", "bases", "components", "crds", "configurations", "generators", "transformers",
	"validators", "patchesStrategicMerge", "patches", "patchesJson6902", "replacements",
}

// kustomizationGeneratorFields are the generators whose files and envs name files.
var kustomizationGeneratorFields = []string{"configMapGenerator", "secretGenerator"}

// kustomizationForbiddenFields would run programs (helm) or fetch charts.
var kustomizationForbiddenFields = []string{"helmCharts", "helmChartInflationGenerator", "helmGlobals"}

// checkKustomizationRefs refuses references that leave the package: URLs, remote bases,
// absolute paths, parent directories above the package root, files the package lacks, and
// helm charts. kustomize would otherwise clone repositories (running git) or fetch URLs.
func checkKustomizationRefs(p string, data []byte, files map[string][]byte, errs *errorList) {
	var k map[string]any
	if err := yaml.Unmarshal(data, &k); err != nil {
		errs.add(p, 0, RuleKustomize, "%v", err)
		return
	}
	lines := indexLines(data)
	for _, f := range kustomizationForbiddenFields {
		if _, ok := k[f]; ok {
			errs.add(p, lines.line(f), RuleKustomizeOutside, "%s is not supported: it would run helm and fetch charts", f)
		}
	}
	dir := path.Dir(p)
	for _, ref := range kustomizationRefs(k) {
		if msg := refProblem(dir, ref.value, files); msg != "" {
			errs.add(p, lines.line(ref.field), RuleKustomizeOutside, "%s %q %s", ref.field, ref.value, msg)
		}
	}
	if openapi, ok := k["openapi"].(map[string]any); ok {
		if v, ok := openapi["path"].(string); ok {
			if msg := refProblem(dir, v, files); msg != "" {
				errs.add(p, lines.line("openapi.path"), RuleKustomizeOutside, "openapi.path %q %s", v, msg)
			}
		}
	}
}

// kustomizationRef is a file reference found in a kustomization.
type kustomizationRef struct {
	field string
	value string
}

// kustomizationRefs lists the file references of a kustomization.
func kustomizationRefs(k map[string]any) []kustomizationRef {
	var refs []kustomizationRef
	for _, f := range kustomizationPathFields {
		list, _ := k[f].([]any)
		for i, item := range list {
			at := f + "[" + strconv.Itoa(i) + "]"
			switch v := item.(type) {
			case string:
				if !strings.Contains(v, "\n") {
					refs = append(refs, kustomizationRef{at, v})
				}
			case map[string]any:
				if s, ok := v["path"].(string); ok {
					refs = append(refs, kustomizationRef{at + ".path", s})
				}
			}
		}
	}
	for _, f := range kustomizationGeneratorFields {
		gens, _ := k[f].([]any)
		for i, g := range gens {
			refs = append(refs, generatorRefs(f+"["+strconv.Itoa(i)+"]", g)...)
		}
	}
	return refs
}

// generatorRefs lists the files a configMapGenerator or secretGenerator entry reads.
func generatorRefs(at string, g any) []kustomizationRef {
	gm, _ := g.(map[string]any)
	var refs []kustomizationRef
	for _, f := range []string{"files", "envs"} {
		list, _ := gm[f].([]any)
		for j, item := range list {
			if s, ok := item.(string); ok {
				_, file, found := strings.Cut(s, "=")
				if !found {
					file = s
				}
				refs = append(refs, kustomizationRef{at + "." + f + "[" + strconv.Itoa(j) + "]", file})
			}
		}
	}
	if s, ok := gm["env"].(string); ok {
		refs = append(refs, kustomizationRef{at + ".env", s})
	}
	return refs
}

// remoteRE matches what kustomize takes for a remote target: a URL scheme, a user@host prefix
// or a github.com host.
var remoteRE = regexp.MustCompile(`(?i)^(git::)?([a-z][a-z0-9+.-]*://|[a-z][a-z0-9-]*@|github\.com[/:])`)

// refProblem says why a reference from a kustomization in dir is refused, or returns "".
func refProblem(dir, ref string, files map[string][]byte) string {
	switch {
	case remoteRE.MatchString(ref) || strings.Contains(ref, "://"):
		return "is remote; only files of the package may be used"
	case path.IsAbs(ref):
		return "is an absolute path; only files of the package may be used"
	}
	target := path.Join(dir, ref)
	if target == ".." || strings.HasPrefix(target, "../") {
		return "points outside the package directory"
	}
	if _, ok := files[target]; ok {
		return ""
	}
	prefix := target + "/"
	if target == "." {
		prefix = ""
	}
	for p := range files {
		if strings.HasPrefix(p, prefix) {
			return ""
		}
	}
	return "is not a file or directory of the package"
}

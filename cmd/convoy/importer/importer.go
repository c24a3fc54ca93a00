package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The kinds Import reads.
var (
	// GitRepositoryKind is Flux's source of Git commits.
	GitRepositoryKind = schema.GroupKind{Group: "source.toolkit.fluxcd.io", Kind: "GitRepository"}
	// KustomizationKind is Flux's applier of a path of a source.
	KustomizationKind = schema.GroupKind{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}
	// PKOHostedClusterPackageKind is Package Operator's rollout of a package to HostedClusters.
	PKOHostedClusterPackageKind = schema.GroupKind{Group: "package-operator.run", Kind: "HostedClusterPackage"}
)

// Result is what Import makes: the convoy objects to commit and what could not be mapped.
type Result struct {
	// GitSources replace Flux's GitRepositories.
	GitSources []*convoyv1alpha1.GitSource
	// HostedClusterPackages replace sets of Kustomizations and PKO's HostedClusterPackages.
	HostedClusterPackages []*convoyv1alpha1.HostedClusterPackage
	// Notes say, per object read, what the convoy objects do not carry over, and what the
	// team must do by hand.
	Notes []string
}

// notef adds a note about the object of kind ns/name.
func (r *Result) notef(kind, ns, name, format string, args ...any) {
	who := kind + " " + name
	if ns != "" {
		who = kind + " " + ns + "/" + name
	}
	r.Notes = append(r.Notes, printable(who+": "+fmt.Sprintf(format, args...)))
}

// printable escapes the control characters of a note (its names and values come from the
// objects read), so that a note is one line and cannot drive the terminal.
func printable(s string) string {
	var b strings.Builder
	for _, c := range s {
		if unicode.IsControl(c) {
			b.WriteString(strconv.QuoteRune(c))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Decode reads every object of a multi-document YAML or JSON stream; documents without a kind
// are skipped.
func Decode(r io.Reader) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		if u.GetKind() == "" {
			continue
		}
		if u.IsList() {
			err := u.EachListItem(func(o runtime.Object) error {
				objs = append(objs, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		objs = append(objs, u)
	}
}

// Import maps objs. Objects of other kinds are named in a note and left out.
func Import(objs []*unstructured.Unstructured) Result {
	var r Result
	var kustomizations []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GroupVersionKind().GroupKind() {
		case GitRepositoryKind:
			r.GitSources = append(r.GitSources, r.fromGitRepository(o))
		case KustomizationKind:
			kustomizations = append(kustomizations, o)
		case PKOHostedClusterPackageKind:
			r.HostedClusterPackages = append(r.HostedClusterPackages, r.fromPKO(o))
		default:
			r.notef(o.GetKind(), o.GetNamespace(), o.GetName(), "not a kind convoy import reads (%s, %s, %s): left out",
				GitRepositoryKind, KustomizationKind, PKOHostedClusterPackageKind)
		}
	}
	r.HostedClusterPackages = append(r.HostedClusterPackages, r.fromKustomizations(kustomizations)...)
	r.renameDuplicates()
	return r
}

// renameDuplicates gives each HostedClusterPackage a name of its own: two sets of
// Kustomizations of one path from two sources (or paths "a/b" and "a.b") would otherwise make
// two objects of one name, the second silently replacing the first when applied. A duplicate
// takes a numbered suffix, and a note says so.
func (r *Result) renameDuplicates() {
	seen := map[string]bool{}
	for _, h := range r.HostedClusterPackages {
		name := h.Name
		for i := 2; seen[name]; i++ {
			name = fmt.Sprintf("%s-%d", h.Name, i)
		}
		if name != h.Name {
			r.notef("HostedClusterPackage", "", name, "named %s-N: another HostedClusterPackage of this import is named %s", h.Name, h.Name)
			h.Name = name
		}
		seen[name] = true
	}
}

// WriteYAML writes the objects of r as one multi-document YAML stream, GitSources first.
func (r Result) WriteYAML(w io.Writer) error {
	var docs [][]byte
	for _, gs := range r.GitSources {
		gs.TypeMeta = metav1.TypeMeta{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "GitSource"}
		docs = append(docs, mustYAML(gs))
	}
	for _, h := range r.HostedClusterPackages {
		h.TypeMeta = metav1.TypeMeta{APIVersion: convoyv1alpha1.GroupVersion.String(), Kind: "HostedClusterPackage"}
		docs = append(docs, mustYAML(h))
	}
	_, err := w.Write(bytes.Join(docs, []byte("---\n")))
	return err
}

// mustYAML encodes obj without its empty status and creation timestamp.
func mustYAML(obj any) []byte {
	raw, err := yaml.Marshal(obj)
	if err != nil {
		panic(err) // the API types always encode
	}
	var m map[string]any
	_ = yaml.Unmarshal(raw, &m)
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	out, _ := yaml.Marshal(m)
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

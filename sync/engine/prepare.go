package engine

import (
	"crypto/sha256"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/sync/engine/memory"
)

// desiredState is an object of a revision as this pass wants it, with its digest (see
// place); ok is false for an object that does not encode, which the ledger then never
// matches.
type desiredState struct {
	// source is the revision's object; it is never changed.
	source *unstructured.Unstructured
	// obj is the object to apply (prepare), or only its name while it may be quiet (place).
	obj *unstructured.Unstructured
	// namespace is where the object lands, as of a kind namespaced or not; shard is the
	// convoy.dev/shard label it carries.
	namespace, shard string
	namespaced       bool
	// quiet is set when nothing changed the object since it was judged available (the memory
	// says so: Memory.Ask).
	quiet bool
	// sourceDigest is the source's; digest the object's as it will be applied (place).
	sourceDigest, digest manifests.Digest
	ok                   bool
	// uid is the object's UID when this owner applied it, set by the memory (Memory.Ask) for an
	// object applied directly: the apply then fails, instead of writing, if the object was
	// deleted or replaced since.
	uid types.UID
	// createOnly is set for an object nothing says exists: it is applied without a read, and
	// only if it does not exist (create.go).
	createOnly bool
	// recorded is the state at which this owner left the object as desired now, as the memory
	// says: an object read at it is untouched and not written.
	recorded memory.Observed
}

// scopes remembers which kinds of the management cluster are namespaced. Asking the REST
// mapper merges the mappings of every API group and allocates a few KiB each time: once per
// object per pass, it was most of what a settled Package's pass allocated.
//
// A remembered answer can be stale: a CustomResourceDefinition deleted and created again with
// the other scope, which the mapper learns on its next reload. So remembered answers only
// serve to find the quiet objects of a pass, which are neither read nor written (an object
// whose kind changed scope is not where the watch saw it, so it is not quiet); every object a
// pass reads or writes, and every object a remembered answer would refuse, is placed with
// the mapper's current answer (the controller's mapper keeps its answers for
// restmapper.KeepFor, a few seconds), which is remembered in turn. Errors are never remembered. The
// kinds of the management cluster bound the map. Hosted clusters come and go, and no watch
// tells when their objects change: they always ask their own mapper.
type scopes struct {
	mu         sync.RWMutex
	namespaced map[schema.GroupVersionKind]bool
}

func newScopes() *scopes {
	return &scopes{namespaced: map[schema.GroupVersionKind]bool{}}
}

// isNamespaced reports whether obj's kind is namespaced in c: the mapper's current answer
// when fresh is set, else the one remembered if there is one.
func (s *scopes) isNamespaced(c *cluster, obj *unstructured.Unstructured, fresh bool) (bool, error) {
	if c.hosted() {
		return c.client.IsObjectNamespaced(obj)
	}
	gvk := obj.GroupVersionKind()
	if !fresh {
		s.mu.RLock()
		namespaced, ok := s.namespaced[gvk]
		s.mu.RUnlock()
		if ok {
			return namespaced, nil
		}
	}
	namespaced, err := c.client.IsObjectNamespaced(obj)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	s.namespaced[gvk] = namespaced
	s.mu.Unlock()
	return namespaced, nil
}

// place decides, without copying them, where the objects land: in the owner's namespace on
// the management cluster, where the manifest says in a hosted cluster. Each state gets its
// namespace, the shard label it will carry, the digest of the object as it will be applied
// (the source, the labels added and the namespace determine it, so hashing them identifies it
// without encoding it), and a stub naming it, which is all a quiet object needs. It uses the
// scopes remembered (see scopes); prepare checks again what the pass will read or write. It
// returns what prepare adds to every object of c.
func (e *Engine) place(c *cluster, ph *Phase, states []desiredState) (preparation, error) {
	p := preparationOf(c)
	for i := range states {
		s := &states[i]
		namespaced, err := e.scopes.isNamespaced(c, s.source, false)
		if err != nil {
			return p, c.classify(err)
		}
		err = c.placeAs(ph, s, p, namespaced)
		if err != nil && !c.hosted() {
			// A remembered scope may be stale: ask the mapper before refusing the object.
			err = e.placeCurrent(c, ph, s, p, false)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

// ownerLabels are the labels every applied object gets.
func (t *Target) ownerLabels() map[string]string {
	l := map[string]string{
		convoyv1alpha1.PackageNameLabel:      t.Name,
		convoyv1alpha1.PackageNamespaceLabel: t.Namespace,
	}
	if t.Kind != "" {
		l[convoyv1alpha1.OwnerKindLabel] = t.Kind
	}
	return l
}

// labels returns the labels objects applied to this cluster get.
func (c *cluster) labels() map[string]string {
	l := c.target.ownerLabels()
	switch {
	case c.hosted():
		l[convoyv1alpha1.HostedClusterLabel] = c.target.Namespace
	case c.target.Shard != "":
		l[convoyv1alpha1.ShardLabel] = c.target.Shard
	}
	return l
}

// keepsOwnShard reports whether obj's manifest names a convoy.dev/shard of its own: it is
// kept (on a Package or an ObjectDeployment it says which replica reconciles the object).
func keepsOwnShard(obj *unstructured.Unstructured) bool {
	_, ok := labelOf(obj, convoyv1alpha1.ShardLabel)
	return ok
}

// preparation is what prepare adds to every object of a cluster.
type preparation struct {
	labels map[string]string
	digest manifests.Digest
}

func preparationOf(c *cluster) preparation {
	labels := c.labels()
	return preparation{labels: labels, digest: labelsDigest(c.name, labels)}
}

// placeAs places one object as of a kind that is namespaced or not.
func (c *cluster) placeAs(ph *Phase, s *desiredState, p preparation, namespaced bool) error {
	ns, err := c.placement(ph, s.source, namespaced)
	if err != nil {
		return err
	}
	s.namespaced, s.namespace = namespaced, ns
	s.shard = p.labels[convoyv1alpha1.ShardLabel]
	if own, ok := labelOf(s.source, convoyv1alpha1.ShardLabel); ok {
		s.shard = own
	}
	s.digest = preparedDigest(s.sourceDigest, p.digest, ns)
	s.obj = stubOf(s.source, ns)
	return nil
}

// prepare makes the object of each state that is not quiet: a copy of its source, labelled
// and placed. It asks the mapper for the kind's current scope first, and places the object
// again when the remembered one was stale: what a pass reads or writes is never placed by a
// remembered answer.
func (e *Engine) prepare(c *cluster, ph *Phase, states []desiredState, p preparation) error {
	for i := range states {
		s := &states[i]
		if s.quiet {
			continue
		}
		if !c.hosted() { // a hosted cluster's scope was the current one already
			if err := e.placeCurrent(c, ph, s, p, true); err != nil {
				return err
			}
		}
		s.obj = s.source.DeepCopy()
		setLabels(s.obj, p.labels)
		s.obj.SetNamespace(s.namespace)
	}
	return nil
}

// placeCurrent places s as the mapper's current answer says, unless s is placed (placed) as
// that answer says already.
func (e *Engine) placeCurrent(c *cluster, ph *Phase, s *desiredState, p preparation, placed bool) error {
	namespaced, err := e.scopes.isNamespaced(c, s.source, true)
	if err != nil {
		return c.classify(err)
	}
	if placed && namespaced == s.namespaced {
		return nil
	}
	return c.placeAs(ph, s, p, namespaced)
}

// stubOf names the object source becomes in namespace, and holds nothing else.
func stubOf(source *unstructured.Unstructured, namespace string) *unstructured.Unstructured {
	meta := map[string]any{"name": source.GetName()}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": source.GetAPIVersion(), "kind": source.GetKind(), "metadata": meta}}
}

// labelsDigest hashes the cluster's name and the labels prepare adds to its objects.
func labelsDigest(cluster string, labels map[string]string) manifests.Digest {
	h := sha256.New()
	h.Write([]byte(cluster))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{'='})
		h.Write([]byte(labels[k]))
	}
	var d manifests.Digest
	h.Sum(d[:0])
	return d
}

// preparedDigest is the digest of an object prepared from a source of digest source, with
// the labels of digest added, in namespace.
func preparedDigest(source, added manifests.Digest, namespace string) manifests.Digest {
	h := sha256.New()
	h.Write(source[:])
	h.Write(added[:])
	h.Write([]byte(namespace))
	var d manifests.Digest
	h.Sum(d[:0])
	return d
}

// placement applies the namespace rules to one object: the namespace it lands in.
func (c *cluster) placement(ph *Phase, obj *unstructured.Unstructured, namespaced bool) (string, error) {
	if c.hosted() {
		return placeHosted(ph, obj, namespaced)
	}
	t := c.target
	switch {
	case !namespaced:
		return "", pass.Stallf(convoyv1alpha1.ForbiddenTargetReason,
			"phase %q: %s is cluster-scoped: management phases may only hold objects of namespace %s",
			ph.Name, describe(obj), t.Namespace)
	case obj.GetNamespace() != "" && obj.GetNamespace() != t.Namespace:
		return "", forbiddenNamespace(t, ph, obj)
	}
	return t.Namespace, nil
}

// placeHosted applies the namespace rules of a hosted cluster: any scope, and namespaced
// objects name their namespace.
func placeHosted(ph *Phase, obj *unstructured.Unstructured, namespaced bool) (string, error) {
	switch {
	case namespaced && obj.GetNamespace() == "":
		return "", pass.Stallf(convoyv1alpha1.ApplyFailedReason,
			"phase %q: %s has no namespace: objects of hosted-cluster phases name their namespace", ph.Name, describe(obj))
	case !namespaced:
		return "", nil
	}
	return obj.GetNamespace(), nil
}

// forbiddenNamespace is the error of a management object that names another namespace.
func forbiddenNamespace(t *Target, ph *Phase, obj *unstructured.Unstructured) error {
	return pass.Stallf(convoyv1alpha1.ForbiddenTargetReason,
		"phase %q: %s is in namespace %s: management phases may only hold objects of namespace %s",
		ph.Name, describe(obj), obj.GetNamespace(), t.Namespace)
}

// setLabels adds labels to obj's labels, in place (obj is a copy the pass owns); a
// convoy.dev/shard the manifest sets is kept.
func setLabels(obj *unstructured.Unstructured, labels map[string]string) {
	own := keepsOwnShard(obj)
	l := labelMap(obj)
	for k, v := range labels {
		if k == convoyv1alpha1.ShardLabel && own {
			continue
		}
		l[k] = v
	}
}

// labelMap returns the labels of obj as the map it holds, made when it has none.
func labelMap(obj *unstructured.Unstructured) map[string]any {
	meta, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		obj.Object["metadata"] = meta
	}
	l, ok := meta["labels"].(map[string]any)
	if !ok {
		l = map[string]any{}
		meta["labels"] = l
	}
	return l
}

// labelOf reads one label of obj without copying its labels (GetLabels makes a map); a null
// value is an empty one, as GetLabels has it.
func labelOf(obj *unstructured.Unstructured, key string) (string, bool) {
	meta, _ := obj.Object["metadata"].(map[string]any)
	l, _ := meta["labels"].(map[string]any)
	v, ok := l[key]
	s, _ := v.(string)
	return s, ok
}

// describe names an object in messages: "apps/Deployment ns/name", "Namespace name".
func describe(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	kind := gvk.Kind
	if gvk.Group != "" {
		kind = gvk.Group + "/" + kind
	}
	if ns := obj.GetNamespace(); ns != "" {
		return kind + " " + ns + "/" + obj.GetName()
	}
	return kind + " " + obj.GetName()
}

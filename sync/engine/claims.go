package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
)

// The marks other tools leave on the objects they apply, as their sources write them.
const (
	// fluxNameLabel and fluxNamespaceLabel name the Flux Kustomization that applied an object
	// (kustomize-controller's kustomization_controller.go sets them on every object it applies
	// and garbage-collects by them).
	fluxNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	fluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
	// fluxFieldManager is kustomize-controller's server-side apply field manager.
	fluxFieldManager = "kustomize-controller"
	// fluxHelmNameLabel names the Flux HelmRelease that installed an object: a Helm release,
	// whose storage would still list the object, so never taken over.
	fluxHelmNameLabel      = "helm.toolkit.fluxcd.io/name"
	fluxHelmNamespaceLabel = "helm.toolkit.fluxcd.io/namespace"

	// pkoGroup is Package Operator's API group: its ObjectSets and ObjectSetPhases own what
	// they apply with a controller owner reference.
	pkoGroup = "package-operator.run"
	// pkoCacheLabel is set by Package Operator on every object it applies, to limit its
	// caches (internal/constants: DynamicCacheLabel).
	pkoCacheLabel = "package-operator.run/cache"
	// pkoRevisionAnnotation is the revision of the ObjectSet that last applied an object.
	pkoRevisionAnnotation = "package-operator.run/revision"
	// pkoOwnersAnnotation holds the owners of an object whose owner lives in another cluster
	// (the annotation owner strategy of objects PKO applies into hosted clusters).
	pkoOwnersAnnotation = "package-operator.run/owners"
	// pkoFieldManager is Package Operator's server-side apply field manager
	// (internal/constants: FieldOwner).
	pkoFieldManager = "package-operator"

	// helmReleaseAnnotation and argoInstanceLabel, argoTrackingAnnotation mark objects of Helm
	// and Argo CD: owners convoy never takes over.
	helmReleaseAnnotation  = "meta.helm.sh/release-name"
	helmNamespaceAnnotaton = "meta.helm.sh/release-namespace"
	managedByLabel         = "app.kubernetes.io/managed-by"
	argoInstanceLabel      = "argocd.argoproj.io/instance"
	argoTrackingAnnotation = "argocd.argoproj.io/tracking-id"
)

// pkoOwnerKinds are the kinds of Package Operator that own the objects they apply.
var pkoOwnerKinds = []string{"ObjectSet", "ClusterObjectSet", "ObjectSetPhase", "ClusterObjectSetPhase"}

// claim is one owner's hold on a live object: the tool (empty for an owner convoy never takes
// over) and who, in words.
type claim struct {
	tool  convoyv1alpha1.AdoptOwner
	owner string
}

// claimsOn returns the holds on live of every owner but this cluster's target: another
// convoy owner, Flux, Package Operator, Helm, Argo CD, and any other controller.
func (c *cluster) claimsOn(live *unstructured.Unstructured) []claim {
	var claims []claim
	if live.GetLabels()[convoyv1alpha1.PackageNameLabel] != "" && !c.owns(live) {
		claims = append(claims, claim{owner: ownerOf(live)})
	}
	claims = append(claims, fluxClaims(live)...)
	claims = append(claims, pkoClaims(live)...)
	return append(claims, otherClaims(live)...)
}

// fluxClaims returns the hold of a Flux Kustomization or HelmRelease on live.
func fluxClaims(live *unstructured.Unstructured) []claim {
	l := live.GetLabels()
	var claims []claim
	if name, ok := l[fluxNameLabel]; ok {
		claims = append(claims, claim{tool: convoyv1alpha1.AdoptFromFlux,
			owner: fmt.Sprintf("managed by Flux Kustomization %s/%s", l[fluxNamespaceLabel], name)})
	}
	if name, ok := l[fluxHelmNameLabel]; ok {
		claims = append(claims, claim{owner: fmt.Sprintf("managed by Flux HelmRelease %s/%s", l[fluxHelmNamespaceLabel], name)})
	}
	return claims
}

// pkoClaims returns Package Operator's hold on live: its owner references, or its marks
// alone (an object of a hosted cluster, owned through an annotation).
func pkoClaims(live *unstructured.Unstructured) []claim {
	var claims []claim
	for _, ref := range live.GetOwnerReferences() {
		if isPKOOwner(ref) {
			claims = append(claims, claim{tool: convoyv1alpha1.AdoptFromPackageOperator,
				owner: fmt.Sprintf("managed by Package Operator %s %s", ref.Kind, ref.Name)})
		}
	}
	if len(claims) > 0 {
		return claims
	}
	_, cached := live.GetLabels()[pkoCacheLabel]
	_, owners := live.GetAnnotations()[pkoOwnersAnnotation]
	if cached || owners {
		return []claim{{tool: convoyv1alpha1.AdoptFromPackageOperator, owner: "managed by Package Operator"}}
	}
	return nil
}

// otherClaims returns the holds of owners convoy never takes over: Helm, Argo CD and
// controllers of any other kind.
func otherClaims(live *unstructured.Unstructured) []claim {
	l, a := live.GetLabels(), live.GetAnnotations()
	var claims []claim
	if name, ok := a[helmReleaseAnnotation]; ok {
		claims = append(claims, claim{owner: fmt.Sprintf("managed by Helm release %s/%s", a[helmNamespaceAnnotaton], name)})
	} else if strings.EqualFold(l[managedByLabel], "Helm") {
		claims = append(claims, claim{owner: "managed by Helm"})
	}
	if name, ok := l[argoInstanceLabel]; ok {
		claims = append(claims, claim{owner: "managed by Argo CD application " + name})
	} else if id, ok := a[argoTrackingAnnotation]; ok {
		claims = append(claims, claim{owner: "managed by Argo CD (" + id + ")"})
	}
	for _, ref := range live.GetOwnerReferences() {
		// Note: an owner reference that is not a controller's only ties the object's life to
		// another object (garbage collection); it holds none of its fields, and stays.
		if !isPKOOwner(ref) && ref.Controller != nil && *ref.Controller {
			claims = append(claims, claim{owner: fmt.Sprintf("owned by %s %s", ref.Kind, ref.Name)})
		}
	}
	return claims
}

// isPKOOwner reports an owner reference to one of Package Operator's ObjectSets or phases.
func isPKOOwner(ref metav1.OwnerReference) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == pkoGroup && slices.Contains(pkoOwnerKinds, ref.Kind)
}

// takesOver reports whether the target may take live over: some owner holds it, and every
// owner that does is a tool the target adopts from (spec.adopt.from).
func (c *cluster) takesOver(claims []claim) bool {
	if len(claims) == 0 {
		return false
	}
	for _, cl := range claims {
		if cl.tool == "" || !slices.Contains(c.target.AdoptFrom, cl.tool) {
			return false
		}
	}
	return true
}

// describeClaims says who holds an object, for a refusal.
func describeClaims(claims []claim) string {
	if len(claims) == 0 {
		return "not managed by convoy"
	}
	owners := make([]string, len(claims))
	for i, cl := range claims {
		owners[i] = cl.owner
	}
	return strings.Join(owners, "; ")
}

// contestedBy returns the hold of Flux or Package Operator on live that says the tool applies
// it while convoy does: any tool's marks on an object convoy took over (its
// convoy.dev/adopted-from label), whether the tool it was taken from came back or another
// began, or a tool the target does not adopt from began to apply an object this owner holds.
// Either way convoy stops rather than write over it in turn. (A tool the target adopts from on
// an object with no convoy.dev/adopted-from label is taken over again: the way back after a
// contest is to stop the tool and remove the label.)
//
// Note: both tools put their marks back on every apply (kustomize-controller its labels,
// Package Operator its owner reference and cache label), so a mark that comes back is the
// field convoy applied flipping back, whichever field the tool also changed.
func (c *cluster) contestedBy(live *unstructured.Unstructured) (claim, bool) {
	from := live.GetLabels()[convoyv1alpha1.AdoptedFromLabel]
	if from == "" && !c.owns(live) {
		return claim{}, false
	}
	for _, cl := range append(fluxClaims(live), pkoClaims(live)...) {
		if cl.tool != "" && (from != "" || !slices.Contains(c.target.AdoptFrom, cl.tool)) {
			return cl, true
		}
	}
	return claim{}, false
}

// reclaimed reports whether obj, which this owner holds, carries Flux's or Package Operator's
// marks again: its old owner was resumed after a takeover, or took it back. Pruning or tearing
// it down would delete what that owner runs, so it is released instead; backing out of a
// takeover by resuming the old owner and deleting the HostedClusterPackage deletes nothing.
func reclaimed(obj client.Object) bool {
	u := &unstructured.Unstructured{}
	u.SetLabels(obj.GetLabels())
	u.SetAnnotations(obj.GetAnnotations())
	u.SetOwnerReferences(obj.GetOwnerReferences())
	return len(fluxClaims(u)) > 0 || len(pkoClaims(u)) > 0
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// pointer escapes a map key for a JSON pointer.
func pointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// marshalPatch encodes a JSON patch.
func marshalPatch(ops []jsonPatchOp) ([]byte, error) {
	return json.Marshal(ops)
}

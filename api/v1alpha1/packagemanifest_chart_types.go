package v1alpha1

import "k8s.io/apimachinery/pkg/runtime"

// Hooks policies of a chart (PackageManifestChartHooks.Policy).
const (
	// ChartHooksRefuse refuses a chart with install or upgrade hooks (the default).
	ChartHooksRefuse = "Refuse"
	// ChartHooksPhases places pre-install/pre-upgrade hooks in hooks.pre and
	// post-install/post-upgrade hooks in hooks.post; delete and rollback hooks are dropped.
	ChartHooksPhases = "Phases"
)

// Default phase names of a chart package that declares no phases: its objects go to these
// phases by kind (see PackageManifestChartPhases).
const (
	ChartPhaseCRDs       = "crds"
	ChartPhaseNamespaces = "namespaces"
	ChartPhaseRBAC       = "rbac"
	ChartPhaseDeploy     = "deploy"
)

// PackageManifestChart is a Helm chart of a package, rendered with the Helm SDK's engine in the
// render sandbox, without cluster access.
type PackageManifestChart struct {
	// path of the chart inside the package directory: a chart directory (holding Chart.yaml)
	// or a packaged chart (.tgz). "." is the package directory itself. Exactly one of path
	// and repository is set.
	// +optional
	Path string `json:"path,omitempty"`

	// repository is the URL of a Helm chart repository (an HTTP server of index.yaml and
	// packaged charts), or of an OCI registry (oci://host/path, the chart being
	// host/path/NAME:VERSION), the chart is pulled from, at version and digest.
	// +optional
	Repository string `json:"repository,omitempty"`

	// name of the chart in the repository.
	// +optional
	Name string `json:"name,omitempty"`

	// version of the chart in the repository, exact.
	// +optional
	Version string `json:"version,omitempty"`

	// digest pins the packaged chart pulled from the repository: "sha256:" and the hex SHA-256
	// of the .tgz (in an OCI registry, the digest of the chart's layer). A chart whose digest
	// differs is refused, and nothing is applied.
	// +optional
	Digest string `json:"digest,omitempty"`

	// releaseName is .Release.Name; the manifest's metadata.name when empty.
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// namespace is .Release.Namespace, also set on the namespaced objects of hosted-cluster
	// phases that name none; the Package's namespace when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// class of the phases convoy declares for the chart when spec.phases is empty: "" (the
	// management cluster) or "hosted-cluster" (the whole chart lands in the hosted cluster).
	// +optional
	Class string `json:"class,omitempty"`

	// values are the package's defaults: over the chart's values.yaml, under the Package's
	// spec.config.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Values *runtime.RawExtension `json:"values,omitempty"`

	// valuesFiles are files of the package (YAML, or Go templates that render to YAML, which
	// see .hostedCluster and .environment) merged, in order, over spec.config: per-cluster
	// values.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// phases places objects that carry no phase annotation, by kind.
	// +optional
	Phases PackageManifestChartPhases `json:"phases,omitempty"`

	// hooks says what becomes of the chart's Helm hooks; tests are always dropped.
	// +optional
	Hooks PackageManifestChartHooks `json:"hooks,omitempty"`

	// pruneCRDs lets the CRDs of the chart's crds/ directory be pruned when they leave the
	// chart; they are kept otherwise (annotation convoy.dev/prune: disabled), as Helm does.
	// +optional
	PruneCRDs bool `json:"pruneCRDs,omitempty"`
}

// PackageManifestChartPhases names the phases of the chart's objects by kind. An unset field
// is the declared phase of its default name (crds, namespaces, rbac) when there is one, else
// default; default is the last declared phase when unset.
type PackageManifestChartPhases struct {
	// crds receives CustomResourceDefinitions (of crds/ and of templates).
	// +optional
	CRDs string `json:"crds,omitempty"`
	// namespaces receives Namespaces.
	// +optional
	Namespaces string `json:"namespaces,omitempty"`
	// rbac receives ServiceAccounts, Roles, ClusterRoles and their bindings.
	// +optional
	RBAC string `json:"rbac,omitempty"`
	// default receives every other object.
	// +optional
	Default string `json:"default,omitempty"`
}

// PackageManifestChartHooks maps Helm hooks to phases.
type PackageManifestChartHooks struct {
	// policy is Refuse (a chart with install or upgrade hooks fails to load, naming them) or
	// Phases.
	// +optional
	Policy string `json:"policy,omitempty"`
	// pre receives pre-install and pre-upgrade hooks under policy Phases; the first declared
	// phase when empty.
	// +optional
	Pre string `json:"pre,omitempty"`
	// post receives post-install and post-upgrade hooks under policy Phases; the last declared
	// phase when empty.
	// +optional
	Post string `json:"post,omitempty"`
}

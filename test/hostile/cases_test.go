package hostile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/internal/pass"
	"github.com/convoy-gitops/convoy/sources"
	"github.com/convoy-gitops/convoy/test/infrastructure/gitserver"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// answerBound is how fast a refusal must show: seconds, not a poll interval away.
const answerBound = 10 * time.Second

// renderBound is how fast a render stopped by the budget must show: the CPU limit, and the
// time to start the render process, on a busy machine.
const renderBound = 20 * time.Second

// corpus is the table of hostile inputs. A new one is one entry: the files of its commit (or a
// change of objects), the reason and message substrings it must answer with, and its bound.
func corpus(t *testing.T) []hostileCase {
	const stopped = "configmap.yaml.gotmpl: limit: rendering was stopped:"
	stoppedAfterCPULimit := fmt.Sprintf("%s it used more than %s of CPU time", stopped, renderCPULimit)
	kubeconfigMessage := func(field, flag string) []string {
		return []string{"Secret $NS/" + kubeconfigSecret, `key "kubeconfig"`, field, flag}
	}
	return []hostileCase{
		{name: "kubeconfig Secret with an `exec` plugin", hosted: true,
			attack: hostileKubeconfig(func(c *clientcmdapi.Config, r *run) {
				c.AuthInfos[hostedName].Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
					Command: "/bin/sh", Args: []string{"-c", "touch " + r.marker}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
			}),
			reason: convoyv1alpha1.KubeconfigRefusedReason, within: answerBound,
			message: kubeconfigMessage("users["+hostedName+"].exec", "--insecure-kubeconfig-exec")},
		{name: "kubeconfig Secret with a `tokenFile` (the controller's own token)", hosted: true,
			attack: hostileKubeconfig(func(c *clientcmdapi.Config, _ *run) {
				c.AuthInfos[hostedName].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
			}),
			reason: convoyv1alpha1.KubeconfigRefusedReason, within: answerBound,
			message: kubeconfigMessage("users["+hostedName+"].tokenFile", "--insecure-kubeconfig-files")},
		{name: "kubeconfig Secret with `insecure-skip-tls-verify`", hosted: true,
			attack: hostileKubeconfig(func(c *clientcmdapi.Config, _ *run) {
				c.Clusters[hostedName].InsecureSkipTLSVerify = true
				c.Clusters[hostedName].CertificateAuthorityData = nil
			}),
			reason: convoyv1alpha1.KubeconfigRefusedReason, within: answerBound,
			message: kubeconfigMessage("clusters["+hostedName+"].insecure-skip-tls-verify", "--insecure-kubeconfig-tls")},
		{name: "kubeconfig Secret with a `proxy-url`", hosted: true,
			attack: hostileKubeconfig(func(c *clientcmdapi.Config, _ *run) {
				c.Clusters[hostedName].ProxyURL = "http://attacker.example:3128"
			}),
			reason: convoyv1alpha1.KubeconfigRefusedReason, within: answerBound,
			message: kubeconfigMessage("clusters["+hostedName+"].proxy-url", "--insecure-kubeconfig-proxy")},
		{name: "kubeconfig Secret pointing at a server whose gzip-compressed answer never ends", hosted: true,
			attack: hostileKubeconfig(func(c *clientcmdapi.Config, r *run) {
				c.Clusters[hostedName].Server = r.flood.URL
				c.Clusters[hostedName].CertificateAuthorityData = nil
			}),
			retried: true, reason: convoyv1alpha1.HostedResponseTooLargeReason, within: answerBound,
			message: []string{"hosted cluster of namespace $NS: ", " with more than 16777216 bytes, counting 64 for each JSON value (--hosted-max-response-bytes); the rest was not read"}},
		{name: "Package naming the GitSource of another namespace, which has no `accessFrom`",
			attack: func(g Gomega, r *run, tn *tenant) {
				patchPackage(g, r, tn, func(p *convoyv1alpha1.Package) { p.Spec.SourceRef.Namespace = r.healthy.ns })
			},
			reason: convoyv1alpha1.CrossNamespaceRefRefusedReason, within: answerBound,
			message: []string{"GitSource $HEALTHY/" + gitSourceName, "namespace $NS", "spec.accessFrom.namespaceSelectors"}},
		{name: "GitSource with a `file://` URL (another tenant's repository on the controller's disk)",
			attack: func(g Gomega, r *run, tn *tenant) {
				patchGitSource(g, r, tn, func(gs *convoyv1alpha1.GitSource) { gs.Spec.URL = r.git.FileURL(r.healthy.ns) })
			},
			onGitSource: true, reason: convoyv1alpha1.InsecureURLRefusedReason, within: answerBound,
			message: []string{"file://", "--allow-file-urls"}},
		{name: "GitSource sending a password over plain `http://`",
			attack: func(g Gomega, r *run, tn *tenant) {
				g.Expect(r.c.Create(r.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "creds"},
					StringData: map[string]string{"username": "user", "password": planted}})).To(Succeed())
				patchGitSource(g, r, tn, func(gs *convoyv1alpha1.GitSource) {
					gs.Spec.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: "creds"}
				})
			},
			onGitSource: true, reason: convoyv1alpha1.InsecureURLRefusedReason, within: answerBound,
			message: []string{"http://", "--allow-insecure-http"}},
		{name: "GitSource URL holding a password, that does not parse",
			attack: func(g Gomega, r *run, tn *tenant) {
				patchGitSource(g, r, tn, func(gs *convoyv1alpha1.GitSource) {
					gs.Spec.URL = "http://user:" + planted + "%zz@127.0.0.1:1/repo.git"
				})
			},
			onGitSource: true, reason: convoyv1alpha1.URLInvalidReason, within: answerBound,
			message: []string{"URL"}},
		{name: "template writing more than 4 MiB",
			commit: files("big.yaml.gotmpl", configMapTemplate("big",
				`{{range until 10000}}{{range until 10000}}0123456789abcdef0123456789abcdef{{end}}{{end}}`)),
			reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"big.yaml.gotmpl:", "larger than 4194304 bytes"}},
		{name: "template asking for a list of a billion items",
			commit: files("long.yaml.gotmpl", configMapTemplate("long", `{{len (until 1000000000)}}`)),
			reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"long.yaml.gotmpl:", "a list longer than"}},
		{name: "template reading the controller's environment (`env`)",
			commit: files("env.yaml.gotmpl", configMapTemplate("env", `{{env "KUBECONFIG"}}`)),
			reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"env.yaml.gotmpl:", `function "env" is not allowed`}},
		{name: "ClusterRoleBinding to `cluster-admin` in a management phase",
			commit: files("admin.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: hostile-admin, annotations: {convoy.dev/phase: deploy}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
`),
			reason: convoyv1alpha1.ForbiddenTargetReason, within: answerBound,
			message: []string{"ClusterRoleBinding hostile-admin", "cluster-scoped"},
			absent:  []objectRef{{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "hostile-admin"}}},
		{name: "Secret written into another namespace (`kube-system`)",
			commit: files("other.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: hostile, namespace: kube-system, annotations: {convoy.dev/phase: deploy}}\n"),
			reason: convoyv1alpha1.ForbiddenTargetReason, within: answerBound,
			message: []string{"Secret kube-system/hostile", "namespace $NS"},
			absent:  []objectRef{{"v1", "Secret", "kube-system", "hostile"}}},
		{name: "template looping for ever (three nested `range until 10000`)",
			commit: testdataPackage(t, "nested-range"), reason: convoyv1alpha1.RenderFailedReason, within: renderBound,
			message: []string{stoppedAfterCPULimit, "--render-cpu-limit"}},
		{name: "template including itself 2^40 times",
			commit: testdataPackage(t, "include-fanout"), reason: convoyv1alpha1.RenderFailedReason, within: renderBound,
			message: []string{stoppedAfterCPULimit}},
		{name: "template doubling a string 40 times",
			commit: testdataPackage(t, "string-doubling"), reason: convoyv1alpha1.RenderFailedReason, within: renderBound,
			message: []string{fmt.Sprintf("%s it needed more than %d MiB of memory", stopped, renderMemoryLimit>>20), "--render-memory-limit"}},
		{name: "template printing a map that contains itself",
			commit: testdataPackage(t, "self-map"), reason: convoyv1alpha1.RenderFailedReason, within: renderBound,
			message: []string{stopped + " it recursed too deep"}},
		{name: "template including itself without end",
			commit: testdataPackage(t, "include-recursion"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"configmap.yaml.gotmpl", `include "again": nested more than 100 deep`}},
		{name: "Helm chart whose template never ends (10^15 iterations)",
			commit: testdataPackage(t, "chart-endless"), reason: convoyv1alpha1.RenderFailedReason, within: renderBound,
			message: []string{fmt.Sprintf("chart: limit: rendering was stopped: it used more than %s of CPU time", renderCPULimit), "--render-cpu-limit"}},
		{name: "packaged Helm chart (2 MB) expanding to 2 GiB",
			commit: testdataPackage(t, "chart-bomb"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"bomb.tgz: chart: loading the chart: decompressed chart is larger than the maximum size 67108864"}},
		{name: "packaged Helm chart with an entry above its root (`../../../../tmp/…`)",
			commit: testdataPackage(t, "chart-traversal"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"traversal.tgz: chart: loading the chart: chart illegally references parent directory"}},
		{name: "Helm chart asking `lookup` for every Secret and `.Files` for ../manifest.yaml and /etc/passwd",
			commit: testdataPackage(t, "chart-outside"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"chart/templates/configmap.yaml:13: template: lookup and .Files found nothing outside the chart"}},
		{name: "YAML alias bomb (a billion strings from nine levels of aliases)",
			commit: testdataPackage(t, "alias-bomb"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"laughs.yaml:2: limit: document expands to more than 4194304 bytes through YAML aliases"}},
		{name: "400,000 tiny documents in one file",
			commit: files("tiny.yaml", strings.Repeat("a: 1\n---\n", 400_000)), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"tiny.yaml:", "limit: the package has more than 10000 documents; the rest was not read"}},
		{name: "CEL probe of quadratic cost",
			commit: testdataPackage(t, "quadratic-probe"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"manifest.yaml:15: probe:", "is too expensive: its estimated worst-case cost"}},
		{name: "CEL config rule of quadratic cost",
			commit: testdataPackage(t, "quadratic-config-rule"), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"manifest.yaml", "rule is too expensive: its estimated worst-case cost"}},
		{name: "1,000 objects without a phase (1,000 errors)",
			commit: files("broken.yaml", phaselessConfigMaps(1000)), reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{`broken.yaml:4: missing-phase: ConfigMap "cm-0000" has no phase`, "… and 980 more problems"}},
		{name: "symlink out of the package directory, to another file of the repository",
			commit: []gitserver.File{
				{Path: "other/objects.yaml", Content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: borrowed, annotations: {convoy.dev/phase: deploy}}\n"},
				{Path: packagePath + "/escape.yaml", Content: "../other/objects.yaml", Symlink: true}},
			reason: convoyv1alpha1.RenderFailedReason, within: answerBound,
			message: []string{"escape.yaml: symlink-outside-package: symlink escape.yaml -> ../other/objects.yaml leads outside the package directory"},
			absent:  []objectRef{{"v1", "ConfigMap", "$NS", "borrowed"}}},
		{name: "commit that empties the package (it would prune everything)",
			commit: files("kept.yaml", ""), reason: convoyv1alpha1.EmptyRevisionReason, within: answerBound,
			message: []string{"renders no objects: refusing to apply it, as it would prune all 1 object of the inventory"}},
		{name: "symlink to `/etc/passwd` (outside the repository)",
			commit:      []gitserver.File{{Path: packagePath + "/passwd.yaml", Content: "/etc/passwd", Symlink: true}},
			onGitSource: true, retried: true, reason: sources.UnsafeSymlinkReason, within: answerBound,
			message: []string{packagePath + "/passwd.yaml", "outside of the tree"}},
		{name: "RoleBinding to the controller's ClusterRole, under a locked-down `spec.serviceAccountName`",
			serviceAccount: "deployer",
			commit: []gitserver.File{{Path: packagePath + "/grab.yaml", Content: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: grab, annotations: {convoy.dev/phase: deploy}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ` + controllerClusterRole + `}
subjects: [{kind: ServiceAccount, name: default}]
`}},
			reason: convoyv1alpha1.ApplyFailedReason, within: answerBound,
			message: []string{"grab", "system:serviceaccount:$NS:deployer", "forbidden"},
			absent:  []objectRef{{"rbac.authorization.k8s.io/v1", "RoleBinding", "$NS", "grab"}}},
		{name: "chart repository that redirects to another port of the same machine",
			attack: commitRedirectedChart, retried: true, reason: pass.FailedReason, within: answerBound,
			message: []string{"fetching chart hostile version 1.0.0 of http://127.0.0.1:", "redirected to http://127.0.0.1:",
				", another host: refused unless the controller runs with --chart-allow-redirects-to-other-hosts"},
			verify: func(g Gomega, r *run) {
				g.Expect(r.chartHop.requests.Load()).To(BeNumerically(">=", 1), "the repository was asked")
				g.Expect(r.chartElsewhere.requests.Load()).To(BeZero(), "the redirect to another port was followed")
			}},
	}
}

// files is a commit of one file of the package directory.
func files(name, content string) []gitserver.File {
	return []gitserver.File{{Path: packagePath + "/" + name, Content: content}}
}

// configMapTemplate is a template of a ConfigMap whose value is body.
func configMapTemplate(name, body string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", annotations: {convoy.dev/phase: deploy}}\ndata:\n  v: \"" + body + "\"\n"
}

// testdataPackage is a commit of the package manifests/testdata/hostile/<name> as the
// tenant's package directory (its manifest has the tenant's phase, deploy).
func testdataPackage(t *testing.T, name string) []gitserver.File {
	t.Helper()
	root, err := simfleet.RepositoryRoot()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	tree, err := gitserver.ReadTree(filepath.Join(root, "manifests", "testdata", "hostile", name), packagePath+"/")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return gitserver.Files(tree)
}

// phaselessConfigMaps is n ConfigMap documents without a phase: n problems.
func phaselessConfigMaps(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%04d}\n", i)
	}
	return b.String()
}

// hostileKubeconfig returns an attack that writes the hosted cluster's kubeconfig, with the
// planted token and edit applied, into the tenant's kubeconfig Secret.
func hostileKubeconfig(edit func(c *clientcmdapi.Config, r *run)) func(Gomega, *run, *tenant) {
	return func(g Gomega, r *run, tn *tenant) {
		raw, err := simfleet.KubeConfigFor(r.hosted.Config, hostedName)
		g.Expect(err).NotTo(HaveOccurred())
		kc, err := clientcmd.Load(raw)
		g.Expect(err).NotTo(HaveOccurred())
		kc.AuthInfos[hostedName].Token = planted
		edit(kc, r)
		out, err := clientcmd.Write(*kc)
		g.Expect(err).NotTo(HaveOccurred())
		secret := &corev1.Secret{}
		g.Expect(r.c.Get(r.ctx, client.ObjectKey{Namespace: tn.ns, Name: kubeconfigSecret}, secret)).To(Succeed())
		secret.Data[convoyv1alpha1.KubeconfigSecretKey] = out
		g.Expect(r.c.Update(r.ctx, secret)).To(Succeed())
	}
}

// patchPackage changes the tenant's Package.
func patchPackage(g Gomega, r *run, tn *tenant, change func(*convoyv1alpha1.Package)) {
	pkg := &convoyv1alpha1.Package{}
	g.Expect(r.c.Get(r.ctx, tn.pkg, pkg)).To(Succeed())
	before := pkg.DeepCopy()
	change(pkg)
	g.Expect(r.c.Patch(r.ctx, pkg, client.MergeFrom(before))).To(Succeed())
}

// patchGitSource changes the tenant's GitSource.
func patchGitSource(g Gomega, r *run, tn *tenant, change func(*convoyv1alpha1.GitSource)) {
	gs := &convoyv1alpha1.GitSource{}
	g.Expect(r.c.Get(r.ctx, client.ObjectKey{Namespace: tn.ns, Name: gitSourceName}, gs)).To(Succeed())
	before := gs.DeepCopy()
	change(gs)
	g.Expect(r.c.Patch(r.ctx, gs, client.MergeFrom(before))).To(Succeed())
}

// TestHostileInputs runs the corpus through one controller process, case after case, and logs
// the hostile-input table of docs/evidence/reliability.md.
func TestHostileInputs(t *testing.T) {
	env.Require(t)
	r := startRun(t)
	var answers []answer
	for _, tc := range corpus(t) {
		t.Run(tc.name, func(t *testing.T) {
			a := r.runCase(t, tc)
			t.Logf("%s: %s after %s, peak RSS %d MiB: %s", tc.name, a.reason, a.took.Round(time.Millisecond), a.peakRSS>>20, a.message)
			answers = append(answers, a)
		})
	}
	signals := startSignals(t, r)
	for _, sc := range signals.signalCorpus() {
		t.Run(sc.name, func(t *testing.T) {
			a := signals.runSignalCase(t, sc)
			t.Logf("%s: %s after %s, peak RSS %d MiB: %s", sc.name, a.reason, a.took.Round(time.Millisecond), a.peakRSS>>20, a.message)
			answers = append(answers, a)
		})
	}
	t.Run("replayed signed webhook delivery", func(t *testing.T) { answers = append(answers, r.runReplayCase(t)) })
	t.Run("no credential leaked, no panic", func(t *testing.T) { r.expectNoLeak(NewWithT(t)) })
	t.Log("\n" + markdownTable(answers))
}

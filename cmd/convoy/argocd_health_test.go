package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	. "github.com/onsi/gomega"
	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/convoy-gitops/convoy/manifests"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
)

// argoCDConfig is the argocd-cm patch that ships the health checks.
const argoCDConfig = "../../deploy/argocd/argocd-cm.yaml"

// healthScripts reads the Lua health check of each convoy kind from the argocd-cm patch, and
// checks that every key holds deploy/argocd/health.lua.
func healthScripts(t *testing.T) map[string]string {
	t.Helper()
	g := NewWithT(t)
	raw, err := os.ReadFile(argoCDConfig)
	g.Expect(err).NotTo(HaveOccurred())
	var cm corev1.ConfigMap
	g.Expect(yaml.UnmarshalStrict(raw, &cm)).To(Succeed())
	source, err := os.ReadFile(filepath.Join(filepath.Dir(argoCDConfig), "health.lua"))
	g.Expect(err).NotTo(HaveOccurred())
	scripts := map[string]string{}
	for _, kind := range []string{"GitSource", "Package", "ObjectDeployment", "HostedClusterPackage"} {
		script, ok := cm.Data["resource.customizations.health.convoy.dev_"+kind]
		g.Expect(ok).To(BeTrue(), "argocd-cm has no health check for %s", kind)
		g.Expect(script).To(Equal(string(source)), "the %s key differs from health.lua", kind)
		scripts[kind] = script
	}
	g.Expect(cm.Data).To(HaveLen(4))
	return scripts
}

// argoHealth runs a health script as Argo CD does: obj is a global table, the script returns
// a table with status and message.
func argoHealth(script string, obj map[string]any) (string, string, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		return "", "", err
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the script returned %s, not a table", L.Get(-1).Type())
	}
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message")), nil
}

// toLua converts a JSON value into a Lua value.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	}
	return lua.LNil
}

// healthCase is one object in one state, with what Argo CD and kstatus must say of it.
type healthCase struct {
	name   string
	yaml   string
	state  func(*unstructured.Unstructured) bool
	argo   string
	kstate kstatus.Status
}

// conditionTrue waits for a condition with status True at the object's generation.
func conditionTrue(kind string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == kind && m["status"] == "True" {
				return kind != "Ready" || observed == u.GetGeneration()
			}
		}
		return false
	}
}

// healthPackages are the package directories of the health cases; no two cases that apply
// render the same object.
var healthPackages = map[string]string{
	"ok/manifest.yaml":      "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: ok}\nspec:\n  phases: [{name: deploy}]\n",
	"ok/cm.yaml":            liveConfigMap("ok", "", "deploy", "k", "v"),
	"waiting/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: waiting}\nspec:\n  phases: [{name: deploy}]\n  availabilityProbes:\n  - selector:\n      kind: {group: \"\", kind: ConfigMap}\n    probes:\n    - condition: {type: Ready, status: \"True\"}\n",
	"waiting/cm.yaml":       liveConfigMap("waiting", "", "deploy", "k", "v"),
	"hcp-ok/manifest.yaml":  "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: hcp-ok}\nspec:\n  phases: [{name: deploy}]\n",
	"hcp-ok/cm.yaml":        liveConfigMap("hcp-ok", "", "deploy", "k", "v"),
	"foreign/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: foreign}\nspec:\n  phases: [{name: deploy}]\n",
	"foreign/cm.yaml":       liveConfigMap("foreign", "kube-system", "deploy", "k", "v"),
}

func healthCases(ns, url string) []healthCase {
	pkg := func(name, path, extra string) string {
		return "apiVersion: convoy.dev/v1alpha1\nkind: Package\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" +
			"spec:\n  sourceRef: {name: health}\n  path: " + path + "\n" + extra
	}
	od := func(name, namespace, extra string) string {
		return "apiVersion: convoy.dev/v1alpha1\nkind: ObjectDeployment\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" +
			"spec:\n  template:\n    spec:\n      phases:\n      - name: deploy\n        objects:\n        - object: {apiVersion: v1, kind: ConfigMap, " +
			"metadata: {name: " + name + namespace + "}, data: {k: v}}\n" + extra
	}
	hcp := func(name, path, sourceNS, extra string) string {
		return "apiVersion: convoy.dev/v1alpha1\nkind: HostedClusterPackage\nmetadata: {name: " + name + "}\n" +
			"spec:\n  hostedClusterSelector: {matchLabels: {health: \"yes\"}}\n  template:\n    spec:\n" +
			"      sourceRef: {name: health" + sourceNS + "}\n      path: " + path + "\n" + extra
	}
	gs := func(name, gitURL, extra string) string {
		return "apiVersion: convoy.dev/v1alpha1\nkind: GitSource\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" +
			"spec:\n  url: " + gitURL + "\n  ref: {branch: main}\n  interval: 1m\n" + extra
	}
	ready, reconciling, stalled := conditionTrue("Ready"), conditionTrue("Reconciling"), conditionTrue("Stalled")
	return []healthCase{
		{"GitSource ready", gs("health", url, ""), ready, "Healthy", kstatus.CurrentStatus},
		{"GitSource retrying", gs("unreachable", "http://127.0.0.1:1/repo.git", ""), reconciling, "Progressing", kstatus.InProgressStatus},
		{"GitSource stalled", gs("no-secret", "https://127.0.0.1:1/repo.git", "  secretRef: {name: missing}\n"), stalled, "Degraded", kstatus.FailedStatus},
		{"Package ready", pkg("ready", "ok", ""), ready, "Healthy", kstatus.CurrentStatus},
		{"Package progressing", pkg("progressing", "waiting", ""), reconciling, "Progressing", kstatus.InProgressStatus},
		{"Package stalled", pkg("stalled", "foreign", ""), stalled, "Degraded", kstatus.FailedStatus},
		{"Package paused", pkg("paused", "ok", "  paused: true\n"), conditionTrue("Paused"), "Suspended", kstatus.CurrentStatus},
		{"ObjectDeployment ready", od("od-ready", "", ""), ready, "Healthy", kstatus.CurrentStatus},
		{"ObjectDeployment stalled", od("od-stalled", ", namespace: kube-system", ""), stalled, "Degraded", kstatus.FailedStatus},
		{"ObjectDeployment paused", od("od-paused", "", "  paused: true\n"), conditionTrue("Paused"), "Suspended", kstatus.CurrentStatus},
		{"HostedClusterPackage done", hcp("hcp-done", "hcp-ok", ", namespace: "+ns, ""), ready, "Healthy", kstatus.CurrentStatus},
		{"HostedClusterPackage rolling out", hcp("hcp-rolling", "waiting", ", namespace: "+ns, ""), reconciling, "Progressing", kstatus.InProgressStatus},
		{"HostedClusterPackage paused", hcp("hcp-paused", "ok", ", namespace: "+ns, "  paused: true\n"), reconciling, "Suspended", kstatus.InProgressStatus},
		{"HostedClusterPackage stalled", hcp("hcp-stalled", "ok", "", ""), stalled, "Degraded", kstatus.FailedStatus},
	}
}

func TestArgoCDHealthAndKstatusOfEveryKindInEveryState(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	scripts := healthScripts(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = env.Stop() }()
	hc, err := env.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "health", Labels: map[string]string{"health": "yes"}})
	g.Expect(err).NotTo(HaveOccurred())
	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "health cases", healthPackages)

	opts, err := devControllerOptions(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	stopped := make(chan error, 1)
	go func() { stopped <- runController(ctx, env.Config, opts) }()
	defer func() {
		cancel()
		g.Expect(<-stopped).To(Succeed(), "the controller stops cleanly")
	}()

	cases := healthCases(hc.HCPNamespace, srv.FileURL("repo"))
	objs := make([]*unstructured.Unstructured, len(cases))
	for i, tc := range cases {
		decoded, err := manifests.DecodeObjects(tc.name, []byte(tc.yaml))
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		objs[i] = decoded[0]
		g.Expect(env.Client.Create(ctx, objs[i])).To(Succeed(), tc.name)
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(objs[i].GroupVersionKind())
			g.Eventually(func() bool {
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(objs[i]), live)).To(Succeed())
				return tc.state(live)
			}, 90*time.Second, 200*time.Millisecond).Should(BeTrue(), func() string {
				raw, _ := yaml.Marshal(live.Object["status"])
				return tc.name + " never reached its state:\n" + string(raw)
			})

			status, message, err := argoHealth(scripts[live.GetKind()], live.Object)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(tc.argo), "Argo CD health: %s", message)
			g.Expect(message).NotTo(BeEmpty())
			res, err := kstatus.Compute(live)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status).To(Equal(tc.kstate), "kstatus: %s", res.Message)
		})
	}
}

func TestArgoCDHealthWaitsForTheLatestGeneration(t *testing.T) {
	g := NewWithT(t)
	script := healthScripts(t)["Package"]
	for name, obj := range map[string]map[string]any{
		"no status yet": {"metadata": map[string]any{"generation": int64(1)}, "spec": map[string]any{}},
		"old generation": {"metadata": map[string]any{"generation": int64(2)}, "spec": map[string]any{},
			"status": map[string]any{"observedGeneration": int64(1), "conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "message": "Applied revision a"}}}},
	} {
		status, _, err := argoHealth(script, obj)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status).To(Equal("Progressing"), name)
	}
}

package main

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	convoyv1alpha1 "github.com/convoy-gitops/convoy/api/v1alpha1"
	"github.com/convoy-gitops/convoy/test/fleet"
	"github.com/convoy-gitops/convoy/test/gittest"
	"github.com/convoy-gitops/convoy/test/infrastructure/simfleet"
)

// planted is the credential the leak test hides everywhere convoy reads credentials from.
const planted = "Planted-Pa55word-7f3a"

// TestPlantedCredentialReachesNoSurface runs `convoy controller` as a process against a real API
// server and real Git, feeds it a password, a bearer token and hosted-cluster tokens in every
// place it reads credentials from (Secrets, URL user info, a URL that does not parse,
// kubeconfigs), drives each through success and failure, and then greps every surface it can
// reach: the status of every object, every event, the controller's whole log at -v 5 and the
// output of convoy render.
func TestPlantedCredentialReachesNoSurface(t *testing.T) {
	fleet.RequireAPIServers(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := fleet.Start(ctx, fleet.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Stop() }()
	hc, err := f.AddHostedCluster(ctx, fleet.HostedClusterInput{Name: "leak"})
	g.Expect(err).NotTo(HaveOccurred())
	ns := hc.HCPNamespace

	srv, repo := gittest.NewServer(t)
	gittest.Commit(t, repo, "one", map[string]string{
		"mgmt/manifest.yaml":   "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: m}\nspec:\n  phases: [{name: deploy}]\n",
		"mgmt/cm.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m, annotations: {convoy.dev/phase: deploy}}\n",
		"hosted/manifest.yaml": "apiVersion: convoy.dev/v1alpha1\nkind: PackageManifest\nmetadata: {name: h}\nspec:\n  phases: [{name: in, class: hosted-cluster}]\n",
		"hosted/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h, namespace: default, annotations: {convoy.dev/phase: in}}\n",
	})
	srv.SetBasicAuth("user", planted)
	withUser := func(raw, password string) string {
		u, err := url.Parse(raw)
		g.Expect(err).NotTo(HaveOccurred())
		u.User = url.UserPassword("user", password)
		return u.String()
	}
	c := f.Client
	secret := func(name string, data map[string]string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
		g.Expect(c.Create(ctx, s)).To(Succeed())
	}
	source := func(name, url, secretName string) {
		gs := &convoyv1alpha1.GitSource{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: convoyv1alpha1.GitSourceSpec{URL: url, Ref: convoyv1alpha1.GitRef{Branch: "main"},
				Interval: &metav1.Duration{Duration: 2 * time.Second}}}
		if secretName != "" {
			gs.Spec.SecretRef = &convoyv1alpha1.LocalObjectReference{Name: secretName}
		}
		g.Expect(c.Create(ctx, gs)).To(Succeed())
	}
	pkg := func(name, source, path, kubeconfig string) {
		p := &convoyv1alpha1.Package{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: convoyv1alpha1.PackageSpec{PackageTemplateSpec: convoyv1alpha1.PackageTemplateSpec{
				SourceRef: convoyv1alpha1.SourceReference{Name: source}, Path: path}}}
		if kubeconfig != "" {
			p.Spec.HostedCluster = &convoyv1alpha1.HostedClusterTarget{KubeconfigSecretRef: &convoyv1alpha1.SecretKeyReference{Name: kubeconfig}}
		}
		g.Expect(c.Create(ctx, p)).To(Succeed())
	}
	secret("basic", map[string]string{"username": "user", "password": planted})
	secret("wrong-basic", map[string]string{"username": "user", "password": planted + "-wrong"})
	secret("bearer", map[string]string{"bearerToken": planted})
	secret("kc-exec", map[string]string{"kubeconfig": plantedKubeconfig(g, hc.Config, true)})
	secret("kc-token", map[string]string{"kubeconfig": plantedKubeconfig(g, hc.Config, false)})
	source("good", srv.HTTPURL("repo"), "basic")
	source("wrong-password", srv.HTTPURL("repo"), "wrong-basic")
	source("user-info", withUser(srv.HTTPURL("nope"), planted), "")
	source("unparsable", "http://user:"+planted+"%zz@127.0.0.1:1/repo", "")
	source("bearer", "http://127.0.0.1:1/repo", "bearer")
	pkg("mgmt", "good", "mgmt", "")
	pkg("exec", "good", "hosted", "kc-exec")
	pkg("token", "good", "hosted", "kc-token")

	var log fleet.SyncBuffer
	stop := startControllerProcess(t, f.Config, &log)
	defer stop()

	g.Eventually(func(g Gomega) {
		ready := map[string]string{}
		gss := &convoyv1alpha1.GitSourceList{}
		g.Expect(c.List(ctx, gss, client.InNamespace(ns))).To(Succeed())
		for _, gs := range gss.Items {
			ready["gs/"+gs.Name] = readyOf(gs.Status.Conditions)
		}
		pkgs := &convoyv1alpha1.PackageList{}
		g.Expect(c.List(ctx, pkgs, client.InNamespace(ns))).To(Succeed())
		for _, p := range pkgs.Items {
			ready["pkg/"+p.Name] = readyOf(p.Status.Conditions)
		}
		g.Expect(ready).To(Equal(map[string]string{
			"gs/good": "True", "gs/wrong-password": "False/AuthenticationFailed", "gs/user-info": "False/GitOperationFailed",
			"gs/unparsable": "False/URLInvalid", "gs/bearer": "False/GitOperationFailed",
			"pkg/mgmt": "True", "pkg/exec": "False/KubeconfigRefused", "pkg/token": "False/ApplyFailed",
		}))
	}, 2*time.Minute).Should(Succeed())

	surfaces := map[string]string{"controller log": log.String()}
	surfaces["status"] = statusesJSON(ctx, g, c, ns)
	events := &eventsv1.EventList{}
	g.Expect(c.List(ctx, events)).To(Succeed())
	surfaces["events"] = mustJSON(g, events.Items)
	out, errOut, err := runCLI("render", "--url", withUser(srv.HTTPURL("repo"), planted), "--path", "mgmt")
	g.Expect(err).NotTo(HaveOccurred())
	surfaces["convoy render"] = out + errOut
	out, errOut, err = runCLI("render", "--url", withUser(srv.HTTPURL("repo"), planted), "--ref", "nope", "--path", "mgmt")
	g.Expect(err).To(HaveOccurred())
	surfaces["convoy render (failing)"] = out + errOut + err.Error()

	g.Expect(surfaces["controller log"]).To(ContainSubstring("Starting the manager"), "the log was captured")
	g.Expect(surfaces["events"]).To(ContainSubstring("AuthenticationFailed"), "the events were captured")
	for name, text := range surfaces {
		for _, form := range []string{planted, url.QueryEscape(planted), url.PathEscape(planted)} {
			g.Expect(strings.Contains(text, form)).To(BeFalse(), "%s holds the planted credential", name)
		}
	}
}

// readyOf returns "True", or "False/<reason>", of the Ready condition.
func readyOf(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == convoyv1alpha1.ReadyCondition {
			if c.Status == metav1.ConditionTrue {
				return "True"
			}
			return string(c.Status) + "/" + c.Reason
		}
	}
	return "none"
}

// statusesJSON returns the status of every GitSource and Package of ns.
func statusesJSON(ctx context.Context, g Gomega, c client.Client, ns string) string {
	gss := &convoyv1alpha1.GitSourceList{}
	g.Expect(c.List(ctx, gss, client.InNamespace(ns))).To(Succeed())
	pkgs := &convoyv1alpha1.PackageList{}
	g.Expect(c.List(ctx, pkgs, client.InNamespace(ns))).To(Succeed())
	var all []any
	for _, gs := range gss.Items {
		all = append(all, gs.Status)
	}
	for _, p := range pkgs.Items {
		all = append(all, p.Status)
	}
	return mustJSON(g, all)
}

func mustJSON(g Gomega, v any) string {
	raw, err := json.Marshal(v)
	g.Expect(err).NotTo(HaveOccurred())
	return string(raw)
}

// plantedKubeconfig returns a kubeconfig of the hosted cluster whose user authenticates with
// the planted token only (refused by the API server), and runs a plugin when exec is set.
func plantedKubeconfig(g Gomega, cfg *rest.Config, exec bool) string {
	raw, err := simfleet.KubeConfigFor(cfg, "leak")
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := clientcmd.Load(raw)
	g.Expect(err).NotTo(HaveOccurred())
	kc.AuthInfos["leak"] = &clientcmdapi.AuthInfo{Token: planted}
	if exec {
		kc.AuthInfos["leak"].Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1",
			Command: "/bin/echo", Args: []string{planted}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}
	out, err := clientcmd.Write(*kc)
	g.Expect(err).NotTo(HaveOccurred())
	return string(out)
}

// startControllerProcess runs `convoy controller` (this test binary, as main) against cfg,
// with its stdout and stderr in log and extra flags after the test's own; stop ends it.
func startControllerProcess(t *testing.T, cfg *rest.Config, log *fleet.SyncBuffer, extra ...string) (stop func()) {
	t.Helper()
	cmd := startController(t, cfg, log, extra...)
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
}

// startController starts `convoy controller` (this test binary, as main) against cfg, without
// leader election, probes, metrics or webhook, with its own storage path, its output in log
// and extra flags after those; the caller ends the process.
func startController(t *testing.T, cfg *rest.Config, log *fleet.SyncBuffer, extra ...string) *exec.Cmd {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	kubeconfig, err := simfleet.KubeConfigFor(cfg, "management")
	g.Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	g.Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	args := append([]string{"controller", "--kubeconfig", path, "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-addr=",
		"--storage-path", filepath.Join(dir, "sources"), "--allow-insecure-http", "--probe-interval=1s", "--v=5"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	g.Expect(cmd.Start()).To(Succeed())
	return cmd
}

package main

import (
	"os"
	_ "time/tzdata" // as upstream: time zones for CronJob validation

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // as upstream: JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as upstream: client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // as upstream: version metric
	"k8s.io/kubernetes/cmd/kube-apiserver/app"

	"github.com/convoy-gitops/convoy/test/tools/internal/orphan"
)

func main() {
	orphan.DieWithParent()
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}

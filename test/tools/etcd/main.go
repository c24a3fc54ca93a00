package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"

	"github.com/convoy-gitops/convoy/test/tools/internal/orphan"
)

func main() {
	orphan.DieWithParent()
	etcdmain.Main(os.Args)
}

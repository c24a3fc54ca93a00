// Command etcd is the etcd server used by convoy's tests and by `convoy dev`.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

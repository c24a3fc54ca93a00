// Command etcd is the etcd server used by convoy's tests and by `convoy-dev`.
package main

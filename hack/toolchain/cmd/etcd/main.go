// Command etcd is the etcd server of the pinned release. etcd's own server module carries
// relative replace directives, so it cannot be `go install`ed; importing it works.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }

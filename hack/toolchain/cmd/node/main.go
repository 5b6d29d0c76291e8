// Command node is kubelet, kubeadm, kube-proxy and kubectl in one binary, for the kind runtime's
// node image: it runs the component named by argv[0] (the image holds symlinks) or by its first
// argument. One link instead of four keeps the image and the build small.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	_ "time/tzdata"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubeadm "k8s.io/kubernetes/cmd/kubeadm/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == "node" && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	switch name {
	case "kubelet":
		os.Exit(cli.Run(kubelet.NewKubeletCommand(context.Background())))
	case "kube-proxy":
		os.Exit(cli.Run(proxy.NewProxyCommand()))
	case "kubectl":
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	case "kubeadm":
		if err := kubeadm.Run(); err != nil {
			os.Exit(1)
		}
	default:
		fmt.Fprintf(os.Stderr, "node: unknown component %q (want kubelet, kubeadm, kube-proxy or kubectl)\n", name)
		os.Exit(2)
	}
}

// Command kube is kube-apiserver, kube-controller-manager, kube-scheduler and kubectl in one
// binary: it runs the component named by argv[0] (the toolchain installs symlinks) or by its
// first argument. Linking once instead of four times saves minutes and hundreds of MB.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	_ "time/tzdata"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	name := filepath.Base(os.Args[0])
	if name == "kube" && len(os.Args) > 1 {
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	switch name {
	case "kube-apiserver":
		os.Exit(cli.Run(apiserver.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(controllermanager.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(scheduler.NewSchedulerCommand()))
	case "kubectl":
		if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	default:
		fmt.Fprintf(os.Stderr, "kube: unknown component %q (want kube-apiserver, kube-controller-manager, kube-scheduler or kubectl)\n", name)
		os.Exit(2)
	}
}

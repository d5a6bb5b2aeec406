module github.com/rte-project/rte/deploy/kubelet-state-copier

go 1.19

package main

import (
	policy "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	policyinformers "k8s.io/client-go/informers/policy"
	policyv1informers "k8s.io/client-go/informers/policy/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
)

// sortedBudgetsFactory is the informer factory every framework reads: the real one, whose
// PodDisruptionBudget store holds the scenario's budgets, with a lister that lists them in
// (namespace, name) order, the order preemptd walks them in. Upstream lists from the
// store, a Go map, in an order that varies from call to call; the plugins that read the
// lister (the PodGroup evaluator: its victims' budgets) then see the pinned order, as the
// per-pod path's given budgets do (see sortBudgets).
type sortedBudgetsFactory struct {
	informers.SharedInformerFactory
}

func (f sortedBudgetsFactory) Policy() policyinformers.Interface {
	return sortedBudgetsPolicy{f.SharedInformerFactory.Policy()}
}

type sortedBudgetsPolicy struct{ policyinformers.Interface }

func (p sortedBudgetsPolicy) V1() policyv1informers.Interface {
	return sortedBudgetsPolicyV1{p.Interface.V1()}
}

type sortedBudgetsPolicyV1 struct{ policyv1informers.Interface }

func (v sortedBudgetsPolicyV1) PodDisruptionBudgets() budgetInformer {
	return sortedBudgetsInformer{v.Interface.PodDisruptionBudgets()}
}

type sortedBudgetsInformer struct{ budgetInformer }

func (i sortedBudgetsInformer) Lister() policylisters.PodDisruptionBudgetLister {
	return sortedBudgetLister{i.budgetInformer.Lister()}
}

type sortedBudgetLister struct {
	policylisters.PodDisruptionBudgetLister
}

func (l sortedBudgetLister) List(selector labels.Selector) ([]*policy.PodDisruptionBudget, error) {
	pdbs, err := l.PodDisruptionBudgetLister.List(selector)
	sortBudgets(pdbs)
	return pdbs, err
}

// withBudgets adds the scenario's budgets to the factory's store and pins their order.
func withBudgets(factory informers.SharedInformerFactory, pdbs []*policy.PodDisruptionBudget) (informers.SharedInformerFactory, error) {
	store := factory.Policy().V1().PodDisruptionBudgets().Informer().GetStore()
	for _, pdb := range pdbs {
		if err := store.Add(pdb); err != nil {
			return nil, err
		}
	}
	return sortedBudgetsFactory{factory}, nil
}

// Command pkocorpus runs `convoy validate` on every package of Package Operator's own test
// corpus and compares each verdict with the one `kubectl package validate` gives. It is a
// by-hand check, not part of CI: it needs a clone (or bare mirror) of
// github.com/package-operator/package-operator. From the root of the convoy module:
//
//	go -C test/tools run ./pkocorpus -repo /path/to/package-operator [-commit HEAD] [-v]
//
// The corpus is config/packages/*, cmd/kubectl-package/{buildcmd,validatecmd}/testdata and
// integration/kubectl-package/testdata/packages/{valid,invalid}/*; a package is a directory
// with a manifest.yaml (config/packages/package-operator and test-stub-image-prefix-override
// hold a manifest.yaml.tpl that PKO's build generates, so they are left out). PKO's verdict is
// "invalid" for the packages under invalid/ and "valid" for every other one.
package main

// Package restmapper keeps the REST mappings a controller looks up on every request.
//
// controller-runtime's client maps an object's kind to its resource and scope on each call,
// and its dynamic mapper answers through a priority mapper over every known group, allocating
// kilobytes per answer. A package applies thousands of objects of a few kinds per rollout, so
// the controller asks the same question thousands of times; Memoize answers it from what the
// mapper said in the last few seconds (KeepFor).
package restmapper

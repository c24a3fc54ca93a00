// Package orphan makes a test server die with the process that started it.
package orphan

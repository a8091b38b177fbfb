package mcphost

// FixtureBin returns the path of the test fixture server (testdata/fixture),
// built by TestMain, for the examples of package mcphost_test.
func FixtureBin() string { return fixtureBin }

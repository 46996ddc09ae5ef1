package pjrt

// CompileRequest is one compilation of CompileConfig.Done, as a Client's CompileHook receives
// it: the program and the compile options, exactly the bytes the plugin compiles, so that a
// persistent compile cache can key its entries by them.
type CompileRequest struct {
	// Client compiles the program (and loads it: Client.DeserializeAndLoad).
	Client *Client
	// Program is the program's bytes, in ProgramFormat ("mlir": StableHLO; "hlo": an
	// HloModuleProto). They must not be changed.
	Program       []byte
	ProgramFormat string
	// CompileOptions is the serialized CompileOptionsProto the program is compiled with.
	CompileOptions []byte

	compile func() (*LoadedExecutable, error)
}

// Compile compiles the program with the plugin, as CompileConfig.Done does when the client has
// no hook.
func (r *CompileRequest) Compile() (*LoadedExecutable, error) { return r.compile() }

// CompileHook returns the loaded executable of a request: compiled (CompileRequest.Compile), or
// found elsewhere, e.g. loaded from a persistent cache of serialized executables
// (LoadedExecutable.Serialize, Client.DeserializeAndLoad). It is called by CompileConfig.Done,
// from the goroutine that calls Done, and may be called from several at once.
type CompileHook func(req *CompileRequest) (*LoadedExecutable, error)

// SetCompileHook makes every later CompileConfig.Done of c compile through hook (nil: the
// plugin compiles, as by default).
func (c *Client) SetCompileHook(hook CompileHook) {
	if hook == nil {
		c.compileHook.Store(nil)
		return
	}
	c.compileHook.Store(&hook)
}

// compileWithHook compiles the program through c's hook, if any, else with compile.
func (c *Client) compileWithHook(program []byte, format string, options []byte, compile func() (*LoadedExecutable, error)) (*LoadedExecutable, error) {
	hook := c.compileHook.Load()
	if hook == nil {
		return compile()
	}
	return (*hook)(&CompileRequest{Client: c, Program: program, ProgramFormat: format, CompileOptions: options, compile: compile})
}

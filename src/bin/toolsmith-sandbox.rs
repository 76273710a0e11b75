//! The sandbox's worker: runs one program per process, with every byte it allocates counted,
//! for a sandbox built with `SandboxBuilder::worker` (see `toolsmith::sandbox::worker`).

#[global_allocator]
static ALLOCATOR: toolsmith::sandbox::worker::CountingAllocator =
    toolsmith::sandbox::worker::CountingAllocator;

fn main() -> std::process::ExitCode {
    toolsmith::sandbox::worker::serve()
}

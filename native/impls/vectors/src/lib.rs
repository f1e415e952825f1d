// Empty: this crate only pins the vector crate (see Cargo.toml).

//! Starts a throwaway PostgreSQL cluster (fsync on), prints `PG_URL=...`, and keeps it until
//! standard input closes; then stops it and deletes its directory. For benchmarks by hand:
//!
//! ```text
//! mkfifo /tmp/pg-hold && sleep infinity > /tmp/pg-hold &
//! cargo run -p harnessx-testkit --example pg_server < /tmp/pg-hold
//! ```

use std::io::Read;

use harnessx_testkit::PgCluster;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cluster = PgCluster::start()?;
    println!("PG_URL={}", cluster.url());
    eprintln!(
        "PostgreSQL from {} is up; close standard input to stop it",
        cluster.bin_dir().display()
    );
    // Returns when standard input reaches its end (the holder exits or Ctrl-D).
    std::io::stdin().read_to_end(&mut Vec::new())?;
    drop(cluster);
    eprintln!("stopped and removed");
    Ok(())
}

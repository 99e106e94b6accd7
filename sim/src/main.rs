//! `mirrorsim`: the command line of the testbed.

fn main() {
    println!("mirrorsim: deterministic simulation testbed for KIP-1279 cluster mirroring");
    println!();
    println!("Guided tour: the Kafka partition model (mirror-core)");
    for line in mirror_sim::tour::partition_story() {
        println!("{line}");
    }
}

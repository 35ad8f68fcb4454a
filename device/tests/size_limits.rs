//! Issue 17, item 8 with a real device: a message size no segment can hold ends the device with a
//! clear error, never a panic or a tiny block passed off as a huge one.

mod common;
use common::process::start_as;
use common::Session;

#[test]
fn i08_bsampler_with_a_message_larger_than_any_segment_exits_with_a_clear_error() {
    for memset in ["false", "true"] {
        let s = Session::new();
        let args = format!(
            "--id sampler1 --transport shmem --session {} --control static --severity info --color false \
             --shm-segment-size 20000000 --msg-size 18446744073709551615 --memset {memset} \
             --channel-config name=data,type=push,method=bind,address={},rateLogging=0",
            s.name,
            s.ipc("data")
        );
        let mut p = start_as(None, env!("CARGO_BIN_EXE_fairmq-bsampler"), &args.split_whitespace().collect::<Vec<_>>());
        let code = p.wait().code();
        let out = p.seen.join("\n");
        assert!(code.is_some_and(|c| c != 0), "--memset {memset}: exit {code:?}: {out}");
        assert!(
            out.contains("Requested message size (18446744073709551615) exceeds segment size (20000000)"),
            "--memset {memset}: {out}"
        );
        assert!(!out.contains("panicked"), "--memset {memset}: {out}");
        assert!(s.objects().is_empty(), "the device removed its session: {:?}", s.objects());
    }
}

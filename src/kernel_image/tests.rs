//! The image selection (pure) and the cubins this build embeds.

use super::*;

static A: [u8; 1] = [1];
static B: [u8; 1] = [2];
static C: [u8; 1] = [3];

const BUILT: [Cubin; 2] = [Cubin { sm: 80, image: &A }, Cubin { sm: 90, image: &B }];

fn sm_of(image: Image) -> Option<u32> {
    match image {
        Image::Sass { sm, .. } => Some(sm),
        Image::Ptx => None,
    }
}

#[test]
fn auto_takes_the_cubin_of_the_same_major_version() {
    for (cc, want) in [
        ((8, 0), Some(80)),
        ((8, 6), Some(80)),
        ((8, 7), Some(80)),
        ((8, 9), Some(80)),
        ((9, 0), Some(90)),
        ((7, 5), None),
        ((10, 0), None),
        ((12, 0), None),
    ] {
        let got = select(cc, &BUILT, ImagePolicy::Auto).unwrap();
        assert_eq!(sm_of(got), want, "compute capability {cc:?}");
    }
    let got = select((9, 0), &BUILT, ImagePolicy::Auto).unwrap();
    assert_eq!(got, Image::Sass { sm: 90, image: &B });
}

#[test]
fn the_highest_minor_not_above_the_device_wins() {
    let built = [
        Cubin { sm: 80, image: &A },
        Cubin { sm: 86, image: &C },
        Cubin { sm: 90, image: &B },
    ];
    assert_eq!(
        sm_of(select((8, 0), &built, ImagePolicy::Auto).unwrap()),
        Some(80)
    );
    assert_eq!(
        sm_of(select((8, 6), &built, ImagePolicy::Auto).unwrap()),
        Some(86)
    );
    assert_eq!(
        sm_of(select((8, 9), &built, ImagePolicy::Auto).unwrap()),
        Some(86)
    );
    // A cubin never runs on a lower minor version of its major.
    let only86 = [Cubin { sm: 86, image: &C }];
    assert_eq!(select((8, 0), &only86, ImagePolicy::Auto).unwrap(), Image::Ptx);
}

#[test]
fn ptx_policy_always_takes_the_ptx() {
    for cc in [(8, 0), (9, 0), (10, 0)] {
        assert_eq!(select(cc, &BUILT, ImagePolicy::Ptx).unwrap(), Image::Ptx);
    }
}

#[test]
fn sass_policy_without_a_fitting_cubin_is_an_error() {
    assert_eq!(
        sm_of(select((9, 0), &BUILT, ImagePolicy::Sass).unwrap()),
        Some(90)
    );
    let err = select((10, 0), &BUILT, ImagePolicy::Sass)
        .unwrap_err()
        .to_string();
    assert!(err.contains("10.0") && err.contains("sm_80, sm_90"), "{err}");
    // A build without ptxas: no cubin at all.
    let err = select((9, 0), &[], ImagePolicy::Sass).unwrap_err().to_string();
    assert!(err.contains("cubins: none"), "{err}");
    assert_eq!(select((9, 0), &[], ImagePolicy::Auto).unwrap(), Image::Ptx);
}

#[test]
fn policy_values() {
    assert_eq!(ImagePolicy::parse(None).unwrap(), ImagePolicy::Auto);
    assert_eq!(ImagePolicy::parse(Some("")).unwrap(), ImagePolicy::Auto);
    assert_eq!(ImagePolicy::parse(Some("auto")).unwrap(), ImagePolicy::Auto);
    assert_eq!(ImagePolicy::parse(Some("SASS")).unwrap(), ImagePolicy::Sass);
    assert_eq!(ImagePolicy::parse(Some(" ptx ")).unwrap(), ImagePolicy::Ptx);
    let err = ImagePolicy::parse(Some("cubin")).unwrap_err().to_string();
    assert!(err.contains("RMM_KERNEL_IMAGE") && err.contains("cubin"), "{err}");
}

/// The CUDA ELF header: machine EM_CUDA (190) and, in ABI version 7 (what
/// ptxas 12.9 writes), the architecture in the low byte of `e_flags`.
fn elf_arch(image: &[u8]) -> (u16, u8, u32) {
    assert!(
        image.len() > 64 && image.starts_with(b"\x7fELF"),
        "not an ELF file"
    );
    let machine = u16::from_le_bytes([image[18], image[19]]);
    let flags = u32::from_le_bytes([image[48], image[49], image[50], image[51]]);
    (machine, image[8], flags & 0xff)
}

#[test]
fn built_cubins_are_sm80_and_sm90_machine_code_or_the_build_says_why_not() {
    let sms: Vec<u32> = CUBINS.iter().map(|c| c.sm).collect();
    if PTX_ONLY_REASON.is_empty() {
        // ptxas was at hand: one cubin per architecture (the PTX targets sm_80 by default).
        let want: Vec<u32> = [80, 90].into_iter().filter(|&sm| sm >= ptx_target()).collect();
        assert_eq!(sms, want);
    } else {
        assert!(
            sms.len() < 2,
            "{sms:?} built, yet the build said: {PTX_ONLY_REASON}"
        );
    }
    for c in CUBINS {
        let (machine, abi, arch) = elf_arch(c.image);
        assert_eq!(machine, 190, "sm_{}: not EM_CUDA", c.sm);
        if abi == 7 {
            assert_eq!(arch, c.sm, "sm_{}: the cubin's own architecture", c.sm);
        }
    }
}

/// The architecture the PTX targets (`.target sm_NN`).
fn ptx_target() -> u32 {
    let line = crate::kernels::PTX
        .lines()
        .find(|l| l.starts_with(".target"))
        .expect(".target");
    line.trim_start_matches(".target sm_")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .expect("sm number")
}

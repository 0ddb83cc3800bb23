//! Kernel interfaces derived from the model: address spaces, types, struct layouts, roles
//! (input / output / both) read from the code, and the constants fuzzing mutates towards.

use cltrap_kernel::interface::{derive, ArgKind, Role, Scalar};
use cltrap_kernel::model::AddressSpace;

mod common;

fn iface() -> cltrap_kernel::interface::KernelInterface {
    let src = common::fixture("fuzz_roles.cl");
    let program = cltrap_kernel::parse_program(&src, "").unwrap();
    derive(&program, "roles").unwrap()
}

fn role(i: &cltrap_kernel::interface::KernelInterface, name: &str) -> Role {
    match &i.args.iter().find(|a| a.name == name).unwrap().kind {
        ArgKind::Buffer { role, .. } => *role,
        other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn roles_from_the_code() {
    let i = iface();
    assert_eq!(role(&i, "in"), Role::Input);
    assert_eq!(role(&i, "out"), Role::Both); // out[0] += ...
    assert_eq!(role(&i, "acc"), Role::Both);
    assert_eq!(role(&i, "via_alias"), Role::Output);
    assert_eq!(role(&i, "via_helper"), Role::Output);
    assert_eq!(role(&i, "read_helper"), Role::Input);
    assert_eq!(role(&i, "vec_out"), Role::Output);
    assert_eq!(role(&i, "counter"), Role::Both);
    assert_eq!(role(&i, "table"), Role::Input);
    // `pairs[i].k = -5` keeps each element's other field: read and written.
    assert_eq!(role(&i, "pairs"), Role::Both);
}

#[test]
fn a_store_to_one_lane_or_field_keeps_the_rest_of_the_element_as_input() {
    let src = common::fixture("fuzz_roles.cl");
    let program = cltrap_kernel::parse_program(&src, "").unwrap();
    let i = derive(&program, "retouch_clear_alpha").unwrap();
    assert_eq!(role(&i, "in"), Role::Both);
}

#[test]
fn kinds_types_and_layouts() {
    let i = iface();
    let kind = |n: &str| &i.args.iter().find(|a| a.name == n).unwrap().kind;
    let space = |n: &str| i.args.iter().find(|a| a.name == n).unwrap().address_space;
    assert_eq!(space("table"), AddressSpace::Constant);
    assert!(matches!(kind("scratch"), ArgKind::Local { elem: Some(_) }));
    assert!(matches!(kind("img"), ArgKind::Image));
    assert!(matches!(kind("smp"), ArgKind::Sampler));
    match kind("u3") {
        ArgKind::Value { ty } => {
            assert_eq!(
                ty.scalar,
                Scalar::Int {
                    bits: 8,
                    signed: false
                }
            );
            assert_eq!((ty.lanes, ty.size()), (3, 4));
        }
        other => panic!("{other:?}"),
    }
    match kind("p") {
        ArgKind::Opaque { layout: Some(l) } => {
            assert_eq!((l.size, l.field("k").unwrap().offset), (8, 4))
        }
        other => panic!("{other:?}"),
    }
    match kind("pairs") {
        ArgKind::Buffer {
            layout: Some(l), ..
        } => assert_eq!(l.name, "Pair"),
        other => panic!("{other:?}"),
    }
    assert!(i.int_constants.contains(&-5) && i.int_constants.contains(&2));
    assert!(i.float_constants.contains(&0.5) && i.float_constants.contains(&2.0));
}

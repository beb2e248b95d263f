// SPDX-License-Identifier: GPL-2.0

//! Host build of the module's pure logic (`src/logic`), exactly the files the kernel compiles,
//! so `cargo test` exercises the same code that runs in the module.

#![no_std]
#![allow(dead_code)]

#[cfg(test)]
extern crate std;

#[path = "../../../src/logic/mod.rs"]
mod logic;

#[cfg(test)]
mod abi_tests;
#[cfg(test)]
mod status_tests;

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
mod btf_tests;
#[cfg(test)]
mod enable_tests;
#[cfg(test)]
mod fuzz_regressions;
#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod grammar_tests;
#[cfg(test)]
mod jhash_tests;
#[cfg(test)]
mod kernel_build_tests;
#[cfg(test)]
mod ksym_text_tests;
#[cfg(test)]
mod matching_tests;
#[cfg(test)]
mod print_fmt_tests;
#[cfg(test)]
mod segments_tests;
#[cfg(test)]
mod show_tests;
#[cfg(test)]
mod stats_tests;
#[cfg(test)]
mod status_tests;
#[cfg(test)]
mod trace_ctx_tests;
#[cfg(test)]
mod trace_output_tests;
#[cfg(test)]
mod validate_tests;

//! gRPC's `grpc-status` codes as HTTP/2 declares them to the books: counted by name under the
//! results' `grpc_status`, a refused code failing in class `grpc`.

use candor_core::phase_results::FailureClass;
use candor_core::reply_codes::{ReplyCode, ReplyCodeTable};
use candor_core::workload_results::FailedCheck;

/// The table of `grpc-status` codes.
pub static GRPC_STATUS: ReplyCodeTable = ReplyCodeTable {
    field: "grpc_status",
    series: "candor_grpc_calls_total",
    names: &candor_grpc::Code::NAMES,
    failure: FailureClass::Grpc,
    check: FailedCheck::Grpc,
};

/// `code` as the books count it.
pub fn reply_code(code: candor_grpc::Code) -> ReplyCode {
    ReplyCode {
        table: &GRPC_STATUS,
        code: code.as_u32(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_named_at_its_number() {
        for code in candor_grpc::Code::ALL {
            assert_eq!(GRPC_STATUS.name(reply_code(code).code), code.name());
        }
    }
}

"""VendorX LUT-1 as an edgesdk target: an example of an out-of-tree accelerator plugin.

The LUT-1 is a small memory-mapped engine that maps every byte of a buffer through a 256-entry table,
which is exactly what an int8 activation (LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1) is. This package
gives edgesdk everything it needs to use it (docs/porting-a-new-accelerator.md walks through each part):

    support           supported.py   which ops, under which named constraints
    generate          below          one table per op (tables.py) + a driver call per layer
    firmware_sources  hal/           the driver, compiled into the firmware
    peripherals       device.py      the emulator's model of the LUT-1 (type "vendorx-lut1")
    estimate          below          cost model: the device's cycle formula
    boards_dirs       boards/        riscv-npu-lut: the riscv-npu board with a LUT-1 at 0x40002000
"""

from __future__ import annotations

from pathlib import Path

from edgesdk.targets.api import PeripheralModel, RegionCode, RegionEstimate, Target

from .device import Lut1Device, run_cycles
from .supported import LUT_SUPPORT
from .tables import op_table

PACKAGE_DIR = Path(__file__).resolve().parent
PERIPHERAL_TYPE = "vendorx-lut1"


class LutTarget(Target):
    name = "lut"
    description = "VendorX LUT-1: int8 activations through a 256-entry lookup table"
    support = LUT_SUPPORT
    peripheral_types = (PERIPHERAL_TYPE,)

    def generate(self, region, ctx) -> RegionCode:
        from edgesdk.ctext import describe_op

        ctx.include("lutaccel.h")
        code = RegionCode()
        for op in region.ops:
            ctx.current_op = op
            x, y = op.inputs[0], op.outputs[0]
            table = ctx.const_array(f"lut_{op.type.lower()}_{op.index}", op_table(op, ctx.rounding_for(op), ctx.rounding_mode), "int8_t")
            code.add(f"{describe_op(op)} on the LUT-1",
                     f"status = lutaccel_apply({table}, {ctx.tensor_ptr(x)}, {ctx.tensor_ptr(y)}, {x.num_elements}u);\n"
                     "if (status != 0) {\n    return status;\n}")
        return code

    def firmware_sources(self, model=None) -> list:
        return [PACKAGE_DIR / "hal" / "lutaccel.c", PACKAGE_DIR / "hal" / "lutaccel.h"]

    def peripherals(self) -> list:
        return [PeripheralModel(PERIPHERAL_TYPE, "VendorX.Lut1", lambda peripheral, board: Lut1Device())]

    def estimate(self, region, board, model=None) -> RegionEstimate:
        peripheral = self.peripheral_of(board)
        cycles = sum(run_cycles(op.inputs[0].num_elements) for op in region.ops)
        return RegionEstimate(cycles, int(peripheral.props.get("clock_hz", 0)) if peripheral else 0, "lut0")

    def boards_dirs(self) -> list:
        return [PACKAGE_DIR / "boards"]


TARGET = LutTarget()

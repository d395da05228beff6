//
// QEMU's sifive_test exit device ("test finisher") as a Renode peripheral, for the riscv-npu platform.
//
// Load it before the platform description: `include @edgesdk/renode/EdgesdkSiFiveTestFinisher.cs`
// (riscv-npu.resc does). The repl entry:
//
//     exit: Edgesdk.SiFiveTestFinisher @ sysbus <0x00100000, +0x1000>
//
// edgesdk firmware ends by writing its exit status to offset 0: 0x5555 = pass (exit code 0),
// (code << 16) | 0x3333 = fail with `code`. This device logs "firmware exited with code N." at Info level
// (Robot suites check it with `Wait For Log Entry`), keeps the code in ExitCode and pauses the emulation,
// like QEMU and the built-in emulator stop at that write. A reset request (0x7777) is refused with an
// error in the log, as the built-in emulator refuses it.
//
using Antmicro.Renode.Core;
using Antmicro.Renode.Logging;
using Antmicro.Renode.Peripherals.Bus;

namespace Antmicro.Renode.Peripherals.Edgesdk
{
    public class SiFiveTestFinisher : IDoubleWordPeripheral
    {
        public SiFiveTestFinisher(IMachine machine)
        {
            this.machine = machine;
            Reset();
        }

        // The firmware's exit code, or -1 while it has not exited (monitor: `exit ExitCode`).
        public long ExitCode { get; private set; }

        public uint ReadDoubleWord(long offset)
        {
            return 0;
        }

        public void WriteDoubleWord(long offset, uint value)
        {
            if(offset != 0)
            {
                return;
            }
            var command = value & CommandMask;
            if(command == CommandPass)
            {
                Finish(0);
            }
            else if(command == CommandFail)
            {
                Finish(value >> 16);
            }
            else if(command == CommandReset)
            {
                this.Log(LogLevel.Error, "firmware asked for a reset, which the riscv-npu platform does not support.");
                machine.PauseAndRequestEmulationPause();
            }
            // Other values are ignored, as QEMU ignores them.
        }

        public void Reset()
        {
            ExitCode = -1;
        }

        private void Finish(uint code)
        {
            ExitCode = code;
            this.Log(LogLevel.Info, "firmware exited with code {0}.", code);
            machine.PauseAndRequestEmulationPause();
        }

        private readonly IMachine machine;

        private const uint CommandMask = 0xFFFF;
        private const uint CommandFail = 0x3333;
        private const uint CommandPass = 0x5555;
        private const uint CommandReset = 0x7777;
    }
}

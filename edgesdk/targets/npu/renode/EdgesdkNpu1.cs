//
// edgesdk NPU-1 as a Renode peripheral (docs/npu-datasheet.md; setup in docs/renode.md).
//
// Load it before the platform description: `include @edgesdk/targets/npu/renode/EdgesdkNpu1.cs` (riscv-npu.resc
// does). The repl entry:
//
//     npu0: Edgesdk.Npu1 @ sysbus <0x40000000, +0x1000>
//         flashBase: 0x20000000
//         flashSize: 0x400000
//         sramBase: 0x80000000
//         sramSize: 0x80000
//         IRQ -> plic@8
//
// This class holds no NPU semantics of its own. Every register read and write goes to the shared C model
// (edgesdk/targets/npu/hw/model/npu_model.c) through P/Invoke - the same code the built-in emulator calls through
// ctypes - so Renode and the built-in emulator cannot compute different results. The class only wires
// the model into the platform:
//   * the model's bus master (command-table fetch and operand DMA) reads and writes the system bus; like
//     the built-in emulator, it may read the flash and SRAM windows and write SRAM only, anything else is a
//     bus error (STATUS.ERROR_CODE = BUS);
//   * its completion/error interrupt (IRQ_STATUS & IRQ_ENABLE) drives the IRQ GPIO, which the platform
//     connects to the interrupt controller;
//   * the flash and SRAM bandwidths feed the model's timing model (PERF_CYCLES).
//
// The model is the host library libedgesdk_npu.so. `python3 -m edgesdk.renode library DIR` builds it
// into DIR; start Renode with DIR on LD_LIBRARY_PATH (`edgesdk hil OUT --emulator renode` does both).
// A START executes the whole command table synchronously inside the register write, in zero virtual time.
//
// Snapshots (Renode's Save/Load, and the snapshot renode-test saves when a test fails) serialize every
// peripheral with Migrant, which refuses native pointers. As Renode's TranslationCPU does with its tlib state:
// the model handle and the delegates the model calls are [Transient]; before serialization the model's
// register file is copied into a managed array (modelState), and after deserialization a new model is
// created, wired and given that register file back.
//
using System;
using System.Runtime.InteropServices;

using Antmicro.Migrant;
using Antmicro.Migrant.Hooks;
using Antmicro.Renode.Core;
using Antmicro.Renode.Logging;
using Antmicro.Renode.Peripherals.Bus;

namespace Antmicro.Renode.Peripherals.Edgesdk
{
    public class Npu1 : IDoubleWordPeripheral, IDisposable
    {
        public Npu1(IMachine machine, ulong flashBase, ulong flashSize, ulong sramBase, ulong sramSize,
                    uint flashBytesPerCycleX256 = 256, uint sramBytesPerCycleX256 = 2048)
        {
            sysbus = machine.GetSystemBus(this);
            flash = new BusWindow(flashBase, flashSize, flashBytesPerCycleX256);
            sram = new BusWindow(sramBase, sramSize, sramBytesPerCycleX256);
            IRQ = new GPIO();
            CreateModel();
        }

        public GPIO IRQ { get; }

        public uint ReadDoubleWord(long offset)
        {
            lock(sync)
            {
                return NativeMethods.npu_reg_read(Device, (uint)offset);
            }
        }

        public void WriteDoubleWord(long offset, uint value)
        {
            lock(sync)
            {
                // A CTRL.START runs the whole command table inside this call.
                NativeMethods.npu_reg_write(Device, (uint)offset, value);
                if(offset == RegisterCtrl && (value & CtrlStart) != 0)
                {
                    LogRunOutcome();
                }
                UpdateInterrupt();
            }
        }

        public void Reset()
        {
            lock(sync)
            {
                // CTRL.RESET returns every register to its reset value (the memory windows stay declared).
                NativeMethods.npu_reg_write(Device, RegisterCtrl, CtrlReset);
                UpdateInterrupt();
            }
        }

        public void Dispose()
        {
            lock(sync)
            {
                if(device != IntPtr.Zero)
                {
                    NativeMethods.npu_destroy(device);
                    device = IntPtr.Zero;
                }
            }
        }

        // Migrant hooks (see the header): the register file crosses a snapshot in modelState.
        [PreSerialization]
        private void SaveModelState()
        {
            lock(sync)
            {
                modelState = new uint[NativeMethods.npu_state_words()];
                NativeMethods.npu_save_state(Device, modelState);
            }
        }

        [PostSerialization]
        private void ForgetModelState()
        {
            modelState = null;
        }

        [PostDeserialization]
        private void RestoreModel()
        {
            CreateModel();
            if(modelState == null || NativeMethods.npu_restore_state(device, modelState, (uint)modelState.Length) != 0)
            {
                throw new InvalidOperationException("The snapshot holds no NPU model state this libedgesdk_npu.so accepts.");
            }
            modelState = null;
        }

        // A new native model, bound to the bus and told the memory windows (the constructor and RestoreModel).
        private void CreateModel()
        {
            device = NativeMethods.npu_create();
            if(device == IntPtr.Zero)
            {
                throw new InvalidOperationException("The NPU model (libedgesdk_npu.so) could not allocate a device.");
            }
            // The delegates are fields: native code keeps pointers to them, so they must outlive the device.
            busRead = ReadFromBus;
            busWrite = WriteToBus;
            NativeMethods.npu_set_bus(device, busRead, busWrite, IntPtr.Zero);
            DeclareMemory(flash, MemoryKindFlash);
            DeclareMemory(sram, MemoryKindSram);
        }

        private IntPtr Device
        {
            get
            {
                if(device == IntPtr.Zero)
                {
                    throw new ObjectDisposedException(nameof(Npu1));
                }
                return device;
            }
        }

        private void DeclareMemory(BusWindow window, uint kind)
        {
            if(NativeMethods.npu_set_memory_class(device, (uint)window.Base, (uint)window.Size, kind, window.BytesPerCycleX256) != 0)
            {
                throw new ArgumentException($"The NPU model rejected the memory window 0x{window.Base:X}+0x{window.Size:X} "
                                            + $"({window.BytesPerCycleX256}/256 bytes per cycle); check the platform description.");
            }
        }

        private void UpdateInterrupt()
        {
            IRQ.Set(NativeMethods.npu_irq_pending(device) != 0);
        }

        private void LogRunOutcome()
        {
            var status = NativeMethods.npu_reg_read(device, RegisterStatus);
            var cycles = NativeMethods.npu_reg_read(device, RegisterPerfCyclesLow)
                         | ((ulong)NativeMethods.npu_reg_read(device, RegisterPerfCyclesHigh) << 32);
            if((status & StatusError) != 0)
            {
                var code = (status & StatusErrorCodeMask) >> StatusErrorCodeShift;
                var command = NativeMethods.npu_reg_read(device, RegisterErrorCommand);
                this.Log(LogLevel.Warning, "NPU run failed: error code 0x{0:X2} at command 0x{1:X8} "
                         + "(docs/npu-datasheet.md lists the codes)", code, command);
            }
            else
            {
                this.Log(LogLevel.Debug, "NPU run done in {0} NPU cycles", cycles);
            }
        }

        // Called by the model (on this thread, inside npu_reg_write) to fetch the table and read operands.
        private int ReadFromBus(IntPtr context, uint address, IntPtr buffer, uint length)
        {
            if(!flash.Contains(address, length) && !sram.Contains(address, length))
            {
                return BusError;
            }
            try
            {
                var data = sysbus.ReadBytes(address, (int)length, onlyMemory: true);
                Marshal.Copy(data, 0, buffer, (int)length);
                return BusOk;
            }
            catch(Exception e)
            {
                // Never let an exception unwind through the native model: report it as a bus error.
                this.Log(LogLevel.Error, "NPU bus read of {0} bytes at 0x{1:X8} failed: {2}", length, address, e.Message);
                return BusError;
            }
        }

        // Called by the model to write results; flash is read-only to the NPU.
        private int WriteToBus(IntPtr context, uint address, IntPtr buffer, uint length)
        {
            if(!sram.Contains(address, length))
            {
                return BusError;
            }
            try
            {
                var data = new byte[length];
                Marshal.Copy(buffer, data, 0, (int)length);
                sysbus.WriteBytes(data, address, onlyMemory: true);
                return BusOk;
            }
            catch(Exception e)
            {
                this.Log(LogLevel.Error, "NPU bus write of {0} bytes at 0x{1:X8} failed: {2}", length, address, e.Message);
                return BusError;
            }
        }

        private readonly IBusController sysbus;
        private readonly BusWindow flash;
        private readonly BusWindow sram;
        private readonly object sync = new object();
        // Native state: not serializable, recreated by RestoreModel after a snapshot is loaded.
        [Transient]
        private IntPtr device;
        [Transient]
        private NativeMethods.BusReadFunction busRead;
        [Transient]
        private NativeMethods.BusWriteFunction busWrite;
        // The model's register file, only while a snapshot is being saved or restored.
        private uint[] modelState;

        // Register offsets and bits used here (docs/npu-datasheet.md section 1; edgesdk/targets/npu/hw/registers.py is
        // the source, tests/test_renode.py compares these with it).
        private const uint RegisterCtrl = 0x008;
        private const uint RegisterStatus = 0x00C;
        private const uint RegisterErrorCommand = 0x010;
        private const uint RegisterPerfCyclesLow = 0x080;
        private const uint RegisterPerfCyclesHigh = 0x084;
        private const uint CtrlStart = 0x1;
        private const uint CtrlReset = 0x2;
        private const uint StatusError = 0x4;
        private const uint StatusErrorCodeMask = 0xFF00;
        private const int StatusErrorCodeShift = 8;
        private const uint MemoryKindSram = 0;
        private const uint MemoryKindFlash = 1;
        private const int BusOk = 0;
        private const int BusError = 1;

        private struct BusWindow
        {
            public BusWindow(ulong baseAddress, ulong size, uint bytesPerCycleX256)
            {
                Base = baseAddress;
                Size = size;
                BytesPerCycleX256 = bytesPerCycleX256;
            }

            public bool Contains(ulong address, ulong length)
            {
                return address >= Base && length <= Size && address - Base <= Size - length;
            }

            public ulong Base { get; }
            public ulong Size { get; }
            public uint BytesPerCycleX256 { get; }
        }

        // The C model's API (edgesdk/targets/npu/hw/model/npu_model.h).
        private static class NativeMethods
        {
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
            public delegate int BusReadFunction(IntPtr context, uint address, IntPtr buffer, uint length);

            [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
            public delegate int BusWriteFunction(IntPtr context, uint address, IntPtr buffer, uint length);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern IntPtr npu_create();

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void npu_destroy(IntPtr device);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void npu_set_bus(IntPtr device, BusReadFunction read, BusWriteFunction write, IntPtr context);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern int npu_set_memory_class(IntPtr device, uint baseAddress, uint size, uint kind, uint bytesPerCycleX256);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern uint npu_reg_read(IntPtr device, uint offset);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void npu_reg_write(IntPtr device, uint offset, uint value);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern int npu_irq_pending(IntPtr device);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern uint npu_state_words();

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void npu_save_state(IntPtr device, [Out] uint[] words);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern int npu_restore_state(IntPtr device, [In] uint[] words, uint count);

            // libedgesdk_npu.so, found through LD_LIBRARY_PATH (Mono and .NET add the lib prefix and .so).
            private const string Library = "edgesdk_npu";
        }
    }
}

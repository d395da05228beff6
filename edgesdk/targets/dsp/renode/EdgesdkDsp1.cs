//
// edgesdk DSP-1 vector DSP as a Renode peripheral (docs/dsp-datasheet.md; setup in docs/renode.md).
//
// Load it before the platform description: `include @edgesdk/targets/dsp/renode/EdgesdkDsp1.cs` (riscv-npu.resc
// does). The repl entry:
//
//     dsp0: Edgesdk.Dsp1 @ sysbus <0x40001000, +0x1000>
//         flashBase: 0x20000000
//         flashSize: 0x400000
//         sramBase: 0x80000000
//         sramSize: 0x80000
//
// Like Edgesdk.Npu1, this class holds no DSP semantics of its own: every register access goes to the
// shared C model (edgesdk/targets/dsp/model/dsp_model.c) through P/Invoke, the code the built-in emulator
// calls through ctypes. The built-in emulator gives the model direct pointers to guest memory; here the
// model stages each operand through the bus callbacks below, which admit the flash window (read only) and
// the SRAM window (read/write) and report anything else as a bus error (STATUS.ERROR_CODE = BUS, 4).
//
// The model is the host library libedgesdk_dsp.so: `python3 -m edgesdk.renode library DIR` builds it (with
// every other native model of the board's peripherals) into DIR; start Renode with DIR on LD_LIBRARY_PATH
// (`edgesdk hil OUT --emulator renode` does both). A START runs one kernel synchronously inside the
// register write, in zero virtual time; the runtime polls STATUS, so no interrupt line is needed.
//
// Snapshots work as in Edgesdk.Npu1: the model handle and its callbacks are [Transient], the model's registers
// cross a snapshot in modelState (Migrant's PreSerialization / PostDeserialization hooks).
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
    public class Dsp1 : IDoubleWordPeripheral, IDisposable
    {
        public Dsp1(IMachine machine, ulong flashBase, ulong flashSize, ulong sramBase, ulong sramSize)
        {
            sysbus = machine.GetSystemBus(this);
            flash = new Window(flashBase, flashSize);
            sram = new Window(sramBase, sramSize);
            CreateModel();
        }

        public uint ReadDoubleWord(long offset)
        {
            lock(sync)
            {
                return NativeMethods.dsp_reg_read(Device, (uint)offset);
            }
        }

        public void WriteDoubleWord(long offset, uint value)
        {
            lock(sync)
            {
                NativeMethods.dsp_reg_write(Device, (uint)offset, value);
                if(offset == RegisterCtrl && (value & CtrlStart) != 0)
                {
                    LogKernelOutcome();
                }
            }
        }

        public void Reset()
        {
            lock(sync)
            {
                NativeMethods.dsp_reg_write(Device, RegisterCtrl, CtrlReset);
            }
        }

        public void Dispose()
        {
            lock(sync)
            {
                if(device != IntPtr.Zero)
                {
                    NativeMethods.dsp_destroy(device);
                    device = IntPtr.Zero;
                }
            }
        }

        // Migrant hooks (see the header): the registers cross a snapshot in modelState.
        [PreSerialization]
        private void SaveModelState()
        {
            lock(sync)
            {
                modelState = new uint[NativeMethods.dsp_state_words()];
                NativeMethods.dsp_save_state(Device, modelState);
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
            if(modelState == null || NativeMethods.dsp_restore_state(device, modelState, (uint)modelState.Length) != 0)
            {
                throw new InvalidOperationException("The snapshot holds no DSP model state this libedgesdk_dsp.so accepts.");
            }
            modelState = null;
        }

        // A new native model bound to the bus (the constructor and RestoreModel).
        private void CreateModel()
        {
            device = NativeMethods.dsp_create();
            if(device == IntPtr.Zero)
            {
                throw new InvalidOperationException("The DSP model (libedgesdk_dsp.so) could not allocate a device.");
            }
            // Fields, not temporaries: native code keeps pointers to the delegates.
            busRead = ReadFromBus;
            busWrite = WriteToBus;
            NativeMethods.dsp_set_bus(device, busRead, busWrite, IntPtr.Zero);
        }

        private IntPtr Device
        {
            get
            {
                if(device == IntPtr.Zero)
                {
                    throw new ObjectDisposedException(nameof(Dsp1));
                }
                return device;
            }
        }

        private void LogKernelOutcome()
        {
            var status = NativeMethods.dsp_reg_read(device, RegisterStatus);
            var opcode = NativeMethods.dsp_reg_read(device, RegisterOpcode);
            if((status & StatusError) != 0)
            {
                var code = (status & StatusErrorCodeMask) >> StatusErrorCodeShift;
                this.Log(LogLevel.Warning, "DSP kernel (opcode {0}) failed: error code {1} "
                         + "(docs/dsp-datasheet.md lists the codes)", opcode, code);
            }
            else
            {
                this.Log(LogLevel.Debug, "DSP kernel (opcode {0}) done in {1} DSP cycles", opcode,
                         NativeMethods.dsp_reg_read(device, RegisterLastCycles));
            }
        }

        // Called by the model (on this thread, inside dsp_reg_write) to stage an operand or the record.
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
                this.Log(LogLevel.Error, "DSP bus read of {0} bytes at 0x{1:X8} failed: {2}", length, address, e.Message);
                return BusError;
            }
        }

        // Called by the model to write a kernel's output back; flash is read-only to the DSP.
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
                this.Log(LogLevel.Error, "DSP bus write of {0} bytes at 0x{1:X8} failed: {2}", length, address, e.Message);
                return BusError;
            }
        }

        private readonly IBusController sysbus;
        private readonly Window flash;
        private readonly Window sram;
        private readonly object sync = new object();
        // Native state: not serializable, recreated by RestoreModel after a snapshot is loaded.
        [Transient]
        private IntPtr device;
        [Transient]
        private NativeMethods.BusFunction busRead;
        [Transient]
        private NativeMethods.BusFunction busWrite;
        // The model's registers, only while a snapshot is being saved or restored.
        private uint[] modelState;

        // Register offsets and bits used here (docs/dsp-datasheet.md; edgesdk/targets/dsp/registers.py is the
        // source, tests/test_dsp.py compares these with it).
        private const uint RegisterCtrl = 0x008;
        private const uint RegisterStatus = 0x00C;
        private const uint RegisterOpcode = 0x010;
        private const uint RegisterLastCycles = 0x040;
        private const uint CtrlStart = 0x1;
        private const uint CtrlReset = 0x2;
        private const uint StatusError = 0x4;
        private const uint StatusErrorCodeMask = 0xFF00;
        private const int StatusErrorCodeShift = 8;
        private const int BusOk = 0;
        private const int BusError = 1;

        private struct Window
        {
            public Window(ulong baseAddress, ulong size)
            {
                Base = baseAddress;
                Size = size;
            }

            public bool Contains(ulong address, ulong length)
            {
                return address >= Base && length <= Size && address - Base <= Size - length;
            }

            public ulong Base { get; }
            public ulong Size { get; }
        }

        // The C model's API (edgesdk/targets/dsp/model/dsp_model.h).
        private static class NativeMethods
        {
            [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
            public delegate int BusFunction(IntPtr context, uint address, IntPtr buffer, uint length);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern IntPtr dsp_create();

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void dsp_destroy(IntPtr device);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void dsp_set_bus(IntPtr device, BusFunction read, BusFunction write, IntPtr context);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern uint dsp_reg_read(IntPtr device, uint offset);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void dsp_reg_write(IntPtr device, uint offset, uint value);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern uint dsp_state_words();

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern void dsp_save_state(IntPtr device, [Out] uint[] words);

            [DllImport(Library, CallingConvention = CallingConvention.Cdecl)]
            public static extern int dsp_restore_state(IntPtr device, [In] uint[] words, uint count);

            // libedgesdk_dsp.so, found through LD_LIBRARY_PATH (Mono and .NET add the lib prefix and .so).
            private const string Library = "edgesdk_dsp";
        }
    }
}
